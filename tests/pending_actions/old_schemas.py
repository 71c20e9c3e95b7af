"""The pending-actions schemas of earlier versions, as they were written: databases made by
them must open, their rows kept."""

SCHEMA_2 = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    text TEXT,
    created_at REAL NOT NULL,
    message_key TEXT
);
CREATE INDEX IF NOT EXISTS batches_by_key ON batches (message_key)
    WHERE message_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS actions (
    action_id TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL REFERENCES batches (batch_id),
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    user_id TEXT,
    server TEXT NOT NULL,
    kind TEXT NOT NULL,
    summary TEXT NOT NULL,
    payload TEXT NOT NULL,
    confirm_label TEXT NOT NULL,
    cancel_label TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    result TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS actions_by_batch ON actions (batch_id);
CREATE INDEX IF NOT EXISTS actions_by_chat ON actions (agent, chat_id, state);
CREATE INDEX IF NOT EXISTS actions_by_expiry ON actions (state, expires_at);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    action_id TEXT NOT NULL REFERENCES actions (action_id),
    from_state TEXT,
    to_state TEXT NOT NULL,
    at REAL NOT NULL,
    actor TEXT,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS events_by_action ON events (action_id, id);
"""

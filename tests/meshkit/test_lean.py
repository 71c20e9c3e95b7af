"""meshkit.lean: a server process defers what it never uses, and everything still works.

Each check runs in a fresh interpreter (``lean.install()`` must come before fastmcp, mcp
and uvicorn are imported, which this test process has long done). These tests pin the
import sites the stand-ins rely on, so a fastmcp, mcp, uvicorn or httpx upgrade that
moves them fails here rather than in production.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

DEFERRED = [
    "rich.console",
    "rich.logging",
    "click",
    "pygments",
    "yaml",
    "joserfc.jws",
    "uvicorn.main",
    "mcp.client.session",
    "mcp.server.mcpserver",
    "cryptography.hazmat.primitives.ciphers.aead",
    "httpx",  # python-telegram-bot's default backend: telegram-io's bots use httpx2
]

# Memory and weather built, and telegram-io's modules (python-telegram-bot included) imported.
BUILD_SERVERS = """
import json, sys, types
from meshkit import lean
lean.install()
from mcp_memory.server import build_server as memory
from mcp_memory.settings import MemorySettings
from mcp_weather.server import build_server as weather
from mcp_weather.settings import WeatherSettings
import telegram
from mcp_telegram_io.server import build_server as telegram_io

def real(name):
    module = sys.modules.get(name)
    return module is not None and type(module) is types.ModuleType and hasattr(module, "__file__")
"""


def probe(body: str, tmp_path: Any) -> Any:
    """Run ``body`` after lean.install() and the servers' imports; it prints one JSON value."""
    script = BUILD_SERVERS + textwrap.dedent(body)
    env = {**os.environ, "DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_built_server_has_not_loaded_what_it_never_uses(tmp_path: Any) -> None:
    loaded = probe(
        f"""
        memory(MemorySettings()); weather(WeatherSettings())
        from mcp_telegram_io.request import Httpx2Request, SharedClient
        shared = SharedClient(connections=2)
        bot = telegram.Bot(  # as telegram-io builds its bots (Bot checks the backend's type)
            "123456:" + "a" * 35,
            request=Httpx2Request(shared),
            get_updates_request=Httpx2Request(shared),
        )
        print(json.dumps([name for name in {DEFERRED!r} if real(name)]))
        """,
        tmp_path,
    )
    assert loaded == []


def test_every_deferred_name_still_works_on_first_use(tmp_path: Any) -> None:
    works = probe(
        """
        out = {}
        import mcp, mcp.server
        out["mcp.Client"] = mcp.Client.__module__
        out["mcp.server.MCPServer"] = mcp.server.MCPServer.__name__
        import yaml
        out["yaml"] = yaml.safe_load("a: [1, 2]")
        import html
        out["html"] = html.unescape("&lt;b&gt;")
        from rich.console import Console
        out["rich"] = type(Console(file=open("/dev/null", "w"))).__module__
        from telegram.request import HTTPXRequest
        default_backend = HTTPXRequest()
        out["HTTPXRequest"] = [
            type(default_backend).__module__, isinstance(default_backend, HTTPXRequest)
        ]
        import httpx
        out["httpx.main"] = callable(httpx.main) and not real("click")
        import importlib, uvicorn, uvicorn.server
        main_module = importlib.import_module("uvicorn.main")
        out["uvicorn.main.Server"] = main_module.Server is uvicorn.server.Server
        out["uvicorn.run"] = uvicorn.run is main_module.run and uvicorn.main is main_module.main
        from fastmcp.server.providers import FastMCPProvider
        out["providers"] = FastMCPProvider.__name__
        print(json.dumps(out))
        """,
        tmp_path,
    )
    assert works == {
        "mcp.Client": "mcp.client.client",
        "mcp.server.MCPServer": "MCPServer",
        "yaml": {"a": [1, 2]},
        "html": "<b>",
        "rich": "rich.console",
        "uvicorn.main.Server": True,
        "uvicorn.run": True,
        "httpx.main": True,
        "HTTPXRequest": ["telegram.request._httpxrequest", True],
        "providers": "FastMCPProvider",
    }


def test_request_state_is_sealed_with_the_real_aes_gcm_once_used(tmp_path: Any) -> None:
    sealed = probe(
        """
        from meshkit.lean import LazyRequestStateCodec
        codec = LazyRequestStateCodec()
        before = real("cryptography.hazmat.primitives.ciphers.aead")
        token = codec.seal(b"state")
        other = LazyRequestStateCodec()
        try:
            other.unseal(token)
            foreign = "accepted"
        except Exception as error:
            foreign = type(error).__name__
        print(json.dumps({
            "loaded_before": before,
            "round_trip": codec.unseal(token).decode(),
            "loaded_after": real("cryptography.hazmat.primitives.ciphers.aead"),
            "other_key": foreign,
        }))
        """,
        tmp_path,
    )
    assert sealed["loaded_before"] is False
    assert sealed["round_trip"] == "state"
    assert sealed["loaded_after"] is True
    assert sealed["other_key"] != "accepted"


def test_telegram_passport_still_decrypts_with_the_real_cryptography(tmp_path: Any) -> None:
    """python-telegram-bot imports cryptography for Passport; lean loads it on first use."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    payload = b'{"document_no": "X1"}'
    padding = 32 + (16 - (32 + len(payload)) % 16) % 16  # Telegram: 32-255 bytes, to 16
    data = bytes([padding]) + os.urandom(padding - 1) + payload
    data_hash = hashlib.sha256(data).digest()
    secret = os.urandom(32)
    key_iv = hashlib.sha512(secret + data_hash).digest()
    encryptor = Cipher(algorithms.AES(key_iv[:32]), modes.CBC(key_iv[32:48])).encryptor()
    encrypted = encryptor.update(data) + encryptor.finalize()
    pem = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )
    found = probe(
        f"""
        from telegram._passport.credentials import decrypt
        before = real("cryptography.hazmat.primitives.ciphers")
        secret = bytes.fromhex("{secret.hex()}")
        digest = bytes.fromhex("{data_hash.hex()}")
        encrypted = bytes.fromhex("{encrypted.hex()}")
        plain = decrypt(secret, digest, encrypted)
        try:
            decrypt(bytes(32), digest, encrypted)
            wrong_secret = "accepted"
        except Exception as error:
            wrong_secret = type(error).__name__
        bot = telegram.Bot("123456:" + "a" * 35, private_key={pem.encode()!r})
        print(json.dumps({{
            "loaded_before": before,
            "plain": plain.decode(),
            "wrong_secret": wrong_secret,
            "key": type(bot.private_key).__module__.split(".")[0],
            "key_size": bot.private_key.key_size,
        }}))
        """,
        tmp_path,
    )
    assert found == {
        "loaded_before": False,
        "plain": payload.decode(),
        "wrong_secret": "PassportDecryptionError",
        "key": "cryptography",
        "key_size": 2048,
    }


def test_every_model_of_ours_builds_when_builds_are_deferred(tmp_path: Any) -> None:
    failures = probe(
        """
        import importlib, pkgutil, pydantic
        import orchestrator, mcp_memory, mcp_weather, mcp_telegram_io, meshkit
        for package in (orchestrator, mcp_memory, mcp_weather, mcp_telegram_io, meshkit):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if not info.name.endswith("__main__"):
                    importlib.import_module(info.name)
        def subclasses(cls):
            for sub in cls.__subclasses__():
                yield sub
                yield from subclasses(sub)
        ours = ("orchestrator", "mcp_memory", "mcp_weather", "mcp_telegram_io", "meshkit")
        failures, built = [], 0
        for model in set(subclasses(pydantic.BaseModel)):
            if model.__module__.split(".")[0] in ours:
                try:
                    model.model_json_schema()
                    built += 1
                except Exception as error:
                    failures.append(f"{model.__module__}.{model.__qualname__}: {error}")
        print(json.dumps({"built": built, "failures": failures}))
        """,
        tmp_path,
    )
    assert failures["failures"] == []
    assert failures["built"] > 10


def test_install_leaves_an_interpreter_that_already_imported_fastmcp_alone() -> None:
    script = textwrap.dedent(
        """
        import json, sys, fastmcp, pydantic
        from meshkit import lean
        before = set(sys.modules)
        lean.install()
        print(json.dumps({
            "new_modules": sorted(set(sys.modules) - before),
            "defer_build": pydantic.BaseModel.model_config.get("defer_build", False),
        }))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == {"new_modules": [], "defer_build": False}

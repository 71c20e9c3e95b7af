"""The fake OpenAI API transcribes as the audio endpoint does, through the real ``openai``
client, on real audio files made by fakes.audio (an Ogg Opus voice note, a WAV)."""

from __future__ import annotations

import httpx2
import pytest
from openai import APIStatusError, AsyncOpenAI, BadRequestError, InternalServerError, RateLimitError
from openai.types.audio.transcription import Transcription, UsageDuration, UsageTokens

from fakes.audio import NotAudio, ogg_opus, probe, wav
from fakes.responses_api import FakeOpenAI, Heard, rate_limited

pytestmark = pytest.mark.anyio


def test_the_made_audio_plays_as_long_as_asked() -> None:
    assert probe(ogg_opus(2.5)).seconds == 2.5
    assert probe(ogg_opus(0.01)).seconds == 0.01
    assert probe(wav(2.5)).seconds == 2.5
    assert probe(wav(1, rate=8000)).container == "wav"
    with pytest.raises(NotAudio):
        probe(ogg_opus(2.5)[:-10])  # the last page cut short


async def test_a_voice_note_is_transcribed_and_billed_by_whole_seconds(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.hear("what the audio says")
    note = ogg_opus(2.5)
    heard = await openai_client.audio.transcriptions.create(
        model="whisper-1", file=("voice.ogg", note, "audio/ogg"), language="en"
    )
    Transcription.model_validate(heard.to_dict())
    assert heard.text == "what the audio says"
    assert isinstance(heard.usage, UsageDuration)
    assert heard.usage.seconds == 3
    assert fake.transcriptions == [
        Heard(
            model="whisper-1",
            filename="voice.ogg",
            content_type="audio/ogg",
            size=len(note),
            seconds=2.5,
            language="en",
            prompt=None,
            response_format="json",
            authorization=f"Bearer {openai_client.api_key}",
        )
    ]
    assert fake.requests == []  # transcriptions are apart from the model's requests


async def test_the_gpt_4o_transcribe_models_bill_tokens(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.hear("a WAV, in tokens")
    heard = await openai_client.audio.transcriptions.create(
        model="gpt-4o-mini-transcribe", file=("note.wav", wav(2.5), "audio/wav")
    )
    assert isinstance(heard.usage, UsageTokens)
    assert (heard.usage.input_tokens, heard.usage.output_tokens) == (25, 5)
    assert heard.usage.total_tokens == 30
    assert heard.usage.input_token_details is not None
    assert heard.usage.input_token_details.audio_tokens == 25


async def test_text_and_verbose_formats_answer_as_the_api_does(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.default_transcript = "the same words"
    plain = await openai_client.audio.transcriptions.create(
        model="whisper-1", file=("voice.oga", ogg_opus(1), "audio/ogg"), response_format="text"
    )
    assert plain == "the same words"
    verbose = await openai_client.audio.transcriptions.create(
        model="whisper-1", file=("voice.ogg", ogg_opus(1.5)), response_format="verbose_json"
    )
    assert (verbose.text, verbose.duration) == ("the same words", 1.5)
    assert [h.response_format for h in fake.transcriptions] == ["text", "verbose_json"]


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("notes.txt", b"remember the milk", "Invalid file format. Supported formats: ['flac',"),
        ("voice.ogg", bytes(range(256)) * 8, "Audio file might be corrupted or unsupported"),
        ("voice.ogg", wav(0.5), "Audio file might be corrupted or unsupported"),
        ("voice", ogg_opus(0.5), "Invalid file format"),
    ],
)
async def test_files_that_are_not_the_audio_they_claim_are_refused(
    fake: FakeOpenAI, openai_client: AsyncOpenAI, name: str, data: bytes, says: str
) -> None:
    fake.hear("never")
    with pytest.raises(BadRequestError, match=says.replace("[", r"\[")):
        await openai_client.audio.transcriptions.create(model="whisper-1", file=(name, data))
    assert len(fake.transcripts) == 1  # a refused request takes no transcript


async def test_a_file_over_25_mib_is_too_large(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.hear("never")
    big = ogg_opus(1) + bytes(26 * 1024 * 1024)
    with pytest.raises(APIStatusError) as raised:
        await openai_client.audio.transcriptions.create(model="whisper-1", file=("voice.ogg", big))
    assert raised.value.status_code == 413
    assert raised.value.body == {
        "message": f"Maximum content size limit (26214400) exceeded ({len(big)} bytes read)",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    assert fake.transcriptions[0].size == len(big)


async def test_an_empty_queue_fails_loudly_and_errors_are_heard_in_turn(
    fake: FakeOpenAI, openai_client: AsyncOpenAI
) -> None:
    fake.hear(rate_limited())
    note = ("voice.ogg", ogg_opus(1))
    with pytest.raises(RateLimitError):
        await openai_client.audio.transcriptions.create(model="whisper-1", file=note)
    with pytest.raises(InternalServerError, match="the test script ran out"):
        await openai_client.audio.transcriptions.create(model="whisper-1", file=note)
    fake.reset()
    assert fake.transcriptions == []


async def test_a_request_without_file_or_model_is_refused(fake: FakeOpenAI) -> None:
    fake.hear("never", "never")
    transport = httpx2.ASGITransport(app=fake.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://fake") as client:
        unfiled = await client.post("/v1/audio/transcriptions", data={"model": "whisper-1"})
        unnamed = await client.post(
            "/v1/audio/transcriptions", files={"file": ("voice.ogg", ogg_opus(1))}
        )
    assert unfiled.status_code == unnamed.status_code == 400
    assert unfiled.json()["error"]["param"] == "file"
    assert unnamed.json()["error"]["message"] == "you must provide a model parameter"
    assert len(fake.transcripts) == 2

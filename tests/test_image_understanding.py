"""Images and LLMs: captions (inline and background), image limits before any call, images
inside messages, and the image contexts of memory extraction."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest

from oracleagentmemory.apis.message import ImageContent, ImageMimeType, TextContent
from oracleagentmemory.core import (
    ImageInputLimitConfig,
    MemoryExtractionConfig,
    MemoryExtractionImageContext,
    MemoryExtractionMode,
    MemoryLinkExtractionMode,
)

from ._fake_model import fake_model
from ._llm_double import LlmCall, ScriptedLlm

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x01" * 64
INLINE = MemoryExtractionMode.INLINE
BACKGROUND = MemoryExtractionMode.BACKGROUND


class BlindLlm(ScriptedLlm):
    """A scripted LLM that says it cannot see images."""

    supports_vision = False


def image_parts(call: LlmCall) -> list[ImageContent]:
    """The image parts a call carried."""
    prompt = call.prompt if isinstance(call.prompt, list) else [call.prompt]
    out = []
    for message in prompt:
        content = getattr(message, "content", None)
        if content is None and isinstance(message, dict):
            content = message.get("content")
        if isinstance(content, list | tuple):
            out += [p for p in content if isinstance(p, ImageContent)]
    return out


def captioner(text: str = "A red bicycle leaning on a canal railing.") -> Any:
    """Answers caption calls (no schema) with ``text``; everything else as the fake model."""
    fake = fake_model()

    def respond(call: LlmCall) -> Any:
        if call.schema is None and image_parts(call):
            return text
        return fake(call)

    return respond


def config(mode: MemoryExtractionMode = INLINE, **kw: Any) -> MemoryExtractionConfig:
    kw.setdefault("enable_context_summary", False)
    kw.setdefault("memory_link_extraction_mode", MemoryLinkExtractionMode.DISABLED)
    return MemoryExtractionConfig(extraction_mode=mode, **kw)


def extraction_calls(llm: ScriptedLlm) -> list[LlmCall]:
    return [c for c in llm.calls if c.schema and "memories" in c.schema["properties"]]


# --------------------------------------------------------------------------------------------
# Captions of standalone images
# --------------------------------------------------------------------------------------------


def test_add_image_without_description_is_captioned_inline(make_client: Any) -> None:
    llm = ScriptedLlm(respond=captioner())
    client = make_client(llm=llm, memory_extraction_config=config(INLINE))
    image_id = client.add_image(PNG, user_id="u1", image_id="img-1")
    [image] = client.list_images(user_id="u1")
    assert (image.id, image.content) == ("img-1", "A red bicycle leaning on a canal railing.")
    [call] = llm.calls
    assert [p.bytes for p in image_parts(call)] == [PNG]
    assert "Describe the image" in call.messages[0][1]
    hits = client.search("bicycle", user_id="u1", record_types=["image"])
    assert [h.id for h in hits] == [image_id]


def test_add_image_is_captioned_in_the_background_and_waits_cover_it(make_client: Any) -> None:
    llm = ScriptedLlm(respond=captioner("A whiteboard with a project plan."))
    client = make_client(llm=llm, memory_extraction_config=config(BACKGROUND))
    thread = client.create_thread(user_id="u1")
    image_id = thread.add_image(PNG)
    thread.wait_for_memory_extraction(timeout=30)
    assert client.list_images(image_id=image_id)[0].content == "A whiteboard with a project plan."
    assert client.get_memory_extraction_stats().captions == 1
    client.add_image(JPEG, user_id="u1", image_id="solo")  # not in a thread: its own queue key
    client.wait_for_memory_extraction(timeout=30)
    assert client.list_images(image_id="solo")[0].content == "A whiteboard with a project plan."


def test_given_descriptions_and_blind_llms_make_no_caption_call(make_client: Any) -> None:
    llm = BlindLlm(respond=captioner())
    client = make_client(llm=llm, memory_extraction_config=config(INLINE))
    client.add_image(PNG, description="given", image_id="a")
    with pytest.warns(RuntimeWarning, match="cannot see images"):
        client.add_image(PNG, image_id="b")
    assert [i.content for i in client.list_images()] == ["given", None]
    with pytest.raises(ValueError, match="supports_vision=False"):
        client.update_image("b", description=None)
    assert llm.calls == []


def test_update_image_with_description_none_writes_a_new_caption(make_client: Any) -> None:
    llm = ScriptedLlm(respond=captioner("A cat asleep on a sofa."))
    client = make_client(llm=llm, memory_extraction_config=config(INLINE))
    client.add_image(PNG, description="old words", image_id="img")
    assert client.update_image("img", description=None) == "img"
    assert client.list_images(image_id="img")[0].content == "A cat asleep on a sofa."
    assert [p.bytes for p in image_parts(llm.calls[-1])] == [PNG]  # the stored bytes
    client.update_image("img", image=JPEG, mime_type=ImageMimeType.JPEG, description=None)
    assert [p.bytes for p in image_parts(llm.calls[-1])] == [JPEG]  # the new bytes
    llm.push(RuntimeError("vision service down"))
    with pytest.raises(RuntimeError, match="down"):
        client.update_image("img", description=None, metadata={"k": 1})
    assert client.list_images(image_id="img")[0].metadata is None  # nothing was written


def test_update_image_in_background(make_client: Any) -> None:
    llm = ScriptedLlm(respond=captioner("A sunny beach."))
    client = make_client(llm=llm, memory_extraction_config=config(BACKGROUND))
    client.add_image(PNG, description="old words", image_id="img")
    client.update_image("img", description=None, metadata={"k": 1})
    client.wait_for_memory_extraction(timeout=30)
    [image] = client.list_images(image_id="img")
    assert (image.content, image.metadata) == ("A sunny beach.", {"k": 1})


# --------------------------------------------------------------------------------------------
# Limits, before any LLM call
# --------------------------------------------------------------------------------------------


def test_image_limits_are_enforced_before_any_llm_call(make_client: Any) -> None:
    llm = ScriptedLlm(respond=captioner())
    client = make_client(
        llm=llm,
        memory_extraction_config=config(INLINE),
        image_input_limit_config=ImageInputLimitConfig(max_raw_image_bytes=40),
    )
    with pytest.raises(ValueError, match="max_raw_image_bytes"):
        client.add_image(PNG)
    thread = client.create_thread(
        user_id="u1", image_input_limit_config=ImageInputLimitConfig(max_raw_image_bytes=1000)
    )
    thread.add_image(PNG, description="fits the thread's limit", image_id="big")
    with pytest.raises(ValueError, match="max_raw_image_bytes"):
        client.update_image("big", description=None)  # over the client's limit
    with pytest.raises(ValueError, match="max_raw_image_bytes"):
        thread.add_messages([{"role": "user", "content": [ImageContent(PNG * 20, "image/png")]}])
    assert llm.calls == []
    assert client.list_images() == [client.list_images()[0]]  # only "big"
    with pytest.raises(ValueError, match="max_raw_image_bytes must be at most 33554432"):
        ImageInputLimitConfig(max_raw_image_bytes=64 * 1024 * 1024)  # above the SDK maximum


def test_image_context_requests_respect_the_count_limit(make_client: Any) -> None:
    llm = ScriptedLlm(respond=captioner())
    client = make_client(
        llm=llm,
        memory_extraction_config=config(
            INLINE, memory_extraction_image_context=MemoryExtractionImageContext.IMAGE
        ),
        image_input_limit_config=ImageInputLimitConfig(max_images_per_llm_request=2),
    )
    thread = client.create_thread(user_id="u1")
    three = [ImageContent(PNG, "image/png", f"photo {i}") for i in range(3)]
    with pytest.raises(ValueError, match="max_images_per_llm_request"):
        thread.add_messages([{"role": "user", "content": [TextContent("look"), *three]}])
    assert llm.calls == [] and thread.get_messages() == []
    thread.add_messages(
        [{"role": "user", "content": [TextContent(f"photo {i}"), three[i]]} for i in range(3)]
    )
    calls = extraction_calls(llm)
    assert [len(image_parts(c)) for c in calls] == [2, 1]  # split to fit the limit


# --------------------------------------------------------------------------------------------
# Images inside messages
# --------------------------------------------------------------------------------------------


def _data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def test_messages_with_image_parts_round_trip(make_client: Any) -> None:
    client = make_client()
    thread = client.create_thread(thread_id="t1", user_id="u1")
    ids = thread.add_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Here is my dog Max"},
                    {"type": "image_url", "image_url": {"url": _data_url(PNG)}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "input_image", "image_url": _data_url(JPEG, "image/jpeg")}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": base64.b64encode(PNG).decode(),
                        },
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    TextContent("and the beach"),
                    ImageContent(PNG, ImageMimeType.PNG, "a sandy beach", id="beach"),
                ],
            },
        ]
    )
    messages = thread.get_messages()
    assert [m.id for m in messages] == ids
    first = messages[0].content
    assert isinstance(first[0], TextContent) and first[0].text == "Here is my dog Max"
    assert isinstance(first[1], ImageContent) and first[1].bytes is None
    assert first[1].mime_type is ImageMimeType.PNG
    assert messages[1].content[0].mime_type is ImageMimeType.JPEG
    with_bytes = thread.get_messages(include_image_bytes=True)
    assert with_bytes[0].content[1].bytes == PNG and with_bytes[1].content[0].bytes == JPEG
    one = thread.get_message(ids[3], included_image_ids=["beach"])
    assert (one.content[1].id, one.content[1].bytes, one.content[1].description) == (
        "beach",
        PNG,
        "a sandy beach",
    )
    images = client.list_images(thread_id="t1")
    assert [i.message_id for i in images] == [ids[0], ids[1], ids[2], ids[3]]
    assert all(i.user_id == "u1" for i in images)
    found = thread.search("sandy beach", record_types=["message"])
    assert found and found[0].id == ids[3]
    assert "[image: a sandy beach]" not in found[0].content  # content is the text parts
    client.update_image("beach", description="a rocky shore")
    assert thread.get_message(ids[3]).content[1].description == "a rocky shore"
    assert client.delete_thread("t1") == 1
    assert client.list_images() == []


@pytest.mark.parametrize(
    ("part", "error", "match"),
    [
        (
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            ValueError,
            "needs its bytes",
        ),
        (
            {"type": "image_url", "image_url": {"url": _data_url(b"GIF89a...", "image/gif")}},
            ValueError,
            "mime_type",
        ),
        ({"type": "audio", "data": "x"}, ValueError, "unsupported content part"),
        (ImageContent(None, ImageMimeType.PNG), ValueError, "needs its bytes"),
        (42, TypeError, "content part"),
    ],
)
def test_bad_image_parts_are_refused_before_anything_is_written(
    make_client: Any, part: Any, error: type, match: str
) -> None:
    client = make_client()
    thread = client.create_thread(user_id="u1")
    with pytest.raises(error, match=match):
        thread.add_messages(
            [
                {"role": "user", "content": "fine"},
                {"role": "user", "content": [TextContent("x"), part]},
            ]
        )
    assert thread.get_messages() == [] and client.list_images() == []


def test_message_images_are_captioned_before_their_extraction(make_client: Any) -> None:
    for mode in (INLINE, BACKGROUND):
        llm = ScriptedLlm(respond=captioner("A golden retriever on a lawn."))
        client = make_client(
            name=f"{mode.value}.db",
            llm=llm,
            memory_extraction_config=config(
                mode, memory_extraction_image_context=MemoryExtractionImageContext.CAPTION
            ),
        )
        thread = client.create_thread(user_id="u1")
        thread.add_messages(
            [{"role": "user", "content": [TextContent("My dog:"), ImageContent(PNG, "image/png")]}]
        )
        thread.wait_for_memory_extraction(timeout=30)
        [call] = extraction_calls(llm)
        assert "[image: A golden retriever on a lawn.]" in call.last_user_text
        assert image_parts(call) == []  # CAPTION sends text only
        image = client.list_images()[0]
        assert image.content == "A golden retriever on a lawn."


def test_caption_context_with_a_blind_llm_needs_descriptions(make_client: Any) -> None:
    llm = BlindLlm(respond=fake_model())
    client = make_client(
        llm=llm,
        memory_extraction_config=config(
            INLINE, memory_extraction_image_context=MemoryExtractionImageContext.CAPTION
        ),
    )
    thread = client.create_thread(user_id="u1")
    with pytest.raises(ValueError, match="CAPTION needs a non-blank description"):
        thread.add_messages([{"role": "user", "content": [ImageContent(PNG, "image/png")]}])
    thread.add_messages(
        [{"role": "user", "content": [ImageContent(PNG, "image/png", "a receipt for 40 EUR")]}]
    )
    assert "[image: a receipt for 40 EUR]" in extraction_calls(llm)[0].last_user_text
    image_client = make_client(
        name="img.db",
        llm=llm,
        memory_extraction_config=config(
            INLINE, memory_extraction_image_context=MemoryExtractionImageContext.IMAGE
        ),
    )
    with pytest.raises(ValueError, match="IMAGE sends images"):
        image_client.create_thread(user_id="u1").add_messages(
            [{"role": "user", "content": [ImageContent(PNG, "image/png", "x")]}]
        )


def test_disabled_context_leaves_images_out_of_the_prompt(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model())
    client = make_client(llm=llm, memory_extraction_config=config(INLINE))
    client.create_thread(user_id="u1").add_messages(
        [{"role": "user", "content": [TextContent("hi"), ImageContent(PNG, "image/png", "cat")]}]
    )
    [call] = extraction_calls(llm)
    assert "image" not in call.last_user_text and "cat" not in call.last_user_text


def test_image_context_sends_the_images_with_labels(make_client: Any) -> None:
    llm = ScriptedLlm(respond=captioner("A small red car."))
    client = make_client(
        llm=llm,
        memory_extraction_config=config(
            INLINE, memory_extraction_image_context=MemoryExtractionImageContext.IMAGE
        ),
    )
    thread = client.create_thread(user_id="u1")
    thread.add_messages(
        [{"role": "user", "content": [TextContent("My new car"), ImageContent(JPEG, "image/jpeg")]}]
    )
    [call] = extraction_calls(llm)
    assert "[image I1: A small red car.]" in call.last_user_text  # captioned first
    assert [p.bytes for p in image_parts(call)] == [JPEG]
    assert "follow the messages" in call.messages[0][1]


def test_memory_context_records_which_image_a_memory_is_about(make_client: Any) -> None:
    llm = ScriptedLlm(respond=fake_model())
    client = make_client(
        llm=llm,
        memory_extraction_config=config(
            INLINE, memory_extraction_image_context=MemoryExtractionImageContext.MEMORY
        ),
    )
    thread = client.create_thread(user_id="u1")
    llm.push(
        {
            "memories": [
                {
                    "type": "fact",
                    "content": "The user's car is a red Fiat 500.",
                    "sources": [1],
                    "images": ["I2", "I9"],
                },
                {"type": "fact", "content": "The user went to Rome.", "sources": [1], "images": []},
            ]
        }
    )
    [mid] = thread.add_messages(
        [
            {
                "role": "user",
                "content": [
                    TextContent("Rome trip, and my car"),
                    ImageContent(PNG, "image/png", "the Colosseum", id="rome"),
                    ImageContent(JPEG, "image/jpeg", "a red Fiat 500", id="car"),
                ],
            }
        ]
    )
    call = extraction_calls(llm)[0]
    assert "[image I1: the Colosseum]" in call.last_user_text
    assert "[image I2: a red Fiat 500]" in call.last_user_text
    item = call.schema["properties"]["memories"]["items"]["properties"]
    assert item["images"]["items"]["enum"] == ["I1", "I2"]
    assert image_parts(call) == []
    [car] = thread.search("Fiat", record_types=["fact"], max_results=1)
    assert (car.source_message_ids, car.source_image_ids) == ((mid,), ("car",))
    [rome] = thread.search("Rome", record_types=["fact"], max_results=1)
    assert rome.source_image_ids == ()


def test_the_page_example_configuration_runs(make_client: Any, caplog: Any) -> None:
    """Page 001's MemoryExtractionConfig: CAPTION images, BACKGROUND, POST_EXTRACTION links
    within 8,000 tokens."""
    llm = ScriptedLlm(respond=captioner("A birthday cake with candles."))
    client = make_client(
        llm=llm,
        memory_extraction_config=MemoryExtractionConfig(
            extract_memories=True,
            memory_extraction_image_context=MemoryExtractionImageContext.CAPTION,
            extraction_mode=MemoryExtractionMode.BACKGROUND,
            memory_link_extraction_mode=MemoryLinkExtractionMode.POST_EXTRACTION,
            memory_link_extraction_token_limit=8_000,
        ),
    )
    thread = client.create_thread(user_id="u1")
    with caplog.at_level(logging.WARNING):
        thread.add_messages([{"role": "user", "content": "It is my birthday on Friday."}])
        thread.add_messages(
            [
                {
                    "role": "user",
                    "content": [TextContent("The cake!"), ImageContent(PNG, "image/png")],
                }
            ]
        )
        thread.wait_for_memory_extraction(timeout=30)
    assert client.list_images()[0].content == "A birthday cake with candles."
    assert "[image: A birthday cake with candles.]" in extraction_calls(llm)[-1].last_user_text
    assert len(client.list_memories(user_id="u1")) == 2
    assert any(c.schema and "1" in c.schema["properties"] for c in llm.calls)  # a link call
    assert client.get_memory_extraction_stats().failed == 0

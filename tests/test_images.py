"""Images: bytes kept apart from records, descriptions searchable, scope and thread rules."""

from __future__ import annotations

from typing import Any

import pytest

from oracleagentmemory.apis.message import ImageMimeType
from oracleagentmemory.apis.records import ImageRecord
from oracleagentmemory.core import ImageInputLimitConfig

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
JPEG = b"\xff\xd8\xff\xe0" + b"\x01" * 32
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x02" * 20


def test_page_examples(client: Any) -> None:
    image_id = client.add_image(
        b"image-bytes",
        description="Image description",
        mime_type=ImageMimeType.PNG,
        image_id="img-1",
        user_id="u1",
    )
    assert image_id == "img-1"
    images = client.list_images(user_id="u1", limit=10)
    assert [image.id for image in images] == ["img-1"]
    assert isinstance(images[0], ImageRecord)
    assert (images[0].mime_type, images[0].bytes, images[0].content) == (
        ImageMimeType.PNG,
        None,
        "Image description",
    )


async def test_page_examples_async(client: Any) -> None:
    await client.add_image_async(
        b"x", description="d", mime_type="image/png", image_id="img-1", user_id="u1"
    )
    images = await client.list_images_async(user_id="u1", limit=10)
    assert [image.id for image in images] == ["img-1"]


def test_bytes_load_on_request_and_mime_detection(client: Any) -> None:
    for name, data in (("p", PNG), ("j", JPEG), ("w", WEBP)):
        client.add_image(data, description=f"{name} picture", image_id=name)
    by_id = {i.id: i for i in client.list_images(include_bytes=True)}
    assert [by_id[n].mime_type for n in "pjw"] == [
        ImageMimeType.PNG,
        ImageMimeType.JPEG,
        ImageMimeType.WEBP,
    ]
    assert by_id["p"].bytes == PNG and by_id["w"].bytes == WEBP
    allow = {i.id: i.bytes for i in client.list_images(include_bytes=["j"])}
    assert allow == {"p": None, "j": JPEG, "w": None}
    assert client.store.get("image", "p", include_bytes=True).bytes == PNG
    assert client.store.get("image", "p").bytes is None
    with pytest.raises(ValueError, match="mime_type"):
        client.add_image(b"not an image", description="?")
    with pytest.raises(ValueError, match="mime_type"):
        client.add_image(PNG, mime_type="image/gif")
    with pytest.raises(TypeError, match="image"):
        client.add_image("not bytes", mime_type="image/png")


def test_raw_size_limit(make_client: Any) -> None:
    client = make_client(image_input_limit_config=ImageInputLimitConfig(max_raw_image_bytes=16))
    with pytest.raises(ValueError, match="max_raw_image_bytes"):
        client.add_image(PNG, description="too big")
    assert client.list_images() == []


def test_descriptions_are_searchable_and_updates_reindex(client: Any) -> None:
    client.add_image(PNG, description="a red bicycle by the canal", image_id="bike", user_id="u")
    hits = client.search("bicycle", user_id="u", record_types=["image"])
    assert [r.id for r in hits] == ["bike"]
    assert client.update_image("bike", description="a blue kayak", metadata={"k": 1}) == "bike"
    assert (
        client.search("bicycle kayak", user_id="u", record_types=["image"])[0].content
        == "a blue kayak"
    )
    assert client.update_image("bike", image=JPEG, mime_type=ImageMimeType.JPEG) == "bike"
    [image] = client.list_images(image_id="bike", include_bytes=True)
    assert (image.bytes, image.mime_type, image.metadata) == (JPEG, ImageMimeType.JPEG, {"k": 1})
    with pytest.raises(ValueError, match="mime_type"):
        client.update_image("bike", image=PNG)
    with pytest.raises(ValueError, match="no llm is configured"):
        client.update_image("bike", description=None)
    with pytest.raises(KeyError):
        client.update_image("ghost", description="x")
    assert client.delete_image("bike") == 1
    assert client.delete_image("bike") == 0
    assert client.list_images() == []


def test_thread_images_follow_the_thread(client: Any) -> None:
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    other = client.create_thread(thread_id="o", user_id="u", agent_id="a")
    iid = thread.add_image(PNG, description="whiteboard photo")
    [image] = client.list_images(thread_id="t")
    assert (image.id, image.user_id, image.agent_id, image.thread_id) == (iid, "u", "a", "t")
    assert [i.id for i in thread.list_images()] == [iid] and other.list_images() == []
    assert other.delete_image(iid) == 0
    with pytest.raises(KeyError):
        other.update_image(iid, description="x")
    assert client.delete_thread("t") == 1  # thread deletion takes its images along
    assert client.list_images() == []

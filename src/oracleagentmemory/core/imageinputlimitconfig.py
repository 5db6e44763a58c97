"""Limits on raw images and on the images sent in one LLM request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from oracleagentmemory._notset import NOT_SET_MARKER, NotSet
from oracleagentmemory.apis.message import ImageContent, Message
from oracleagentmemory.core._shared._config import LayeredConfig, check_int

MIB: Final = 1024 * 1024

MAX_RAW_IMAGE_BYTES_DEFAULT: Final = 10 * MIB
MAX_IMAGES_PER_LLM_REQUEST_DEFAULT: Final = 100
MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_DEFAULT: Final = 100 * MIB
MAX_RAW_IMAGE_BYTES_ABSOLUTE: Final = 32 * MIB
MAX_IMAGES_PER_LLM_REQUEST_ABSOLUTE: Final = 512
MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_ABSOLUTE: Final = 256 * MIB

IMAGE_INPUT_LIMIT_DEFAULTS: Final[Mapping[str, int]] = {
    "max_raw_image_bytes": MAX_RAW_IMAGE_BYTES_DEFAULT,
    "max_images_per_llm_request": MAX_IMAGES_PER_LLM_REQUEST_DEFAULT,
    "max_total_raw_image_bytes_per_llm_request": MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_DEFAULT,
}
"""SDK defaults: the last layer of resolution."""

IMAGE_INPUT_ABSOLUTE_MAXIMA: Final[Mapping[str, int]] = {
    "max_raw_image_bytes": MAX_RAW_IMAGE_BYTES_ABSOLUTE,
    "max_images_per_llm_request": MAX_IMAGES_PER_LLM_REQUEST_ABSOLUTE,
    "max_total_raw_image_bytes_per_llm_request": MAX_TOTAL_RAW_IMAGE_BYTES_PER_LLM_REQUEST_ABSOLUTE,
}
"""Hard ceilings no configured value may exceed, at any scope."""


@dataclass(frozen=True)
class _ResolvedImageInputLimitConfig:
    """Image input limits with every field resolved to a concrete value."""

    max_raw_image_bytes: int
    max_images_per_llm_request: int
    max_total_raw_image_bytes_per_llm_request: int


@dataclass(frozen=True, repr=False)
class ImageInputLimitConfig(LayeredConfig):
    """Limits on raw image size and on the images sent in one LLM request.

    Values must be at least 1 and at most :data:`IMAGE_INPUT_ABSOLUTE_MAXIMA`; validation
    cannot be turned off.
    """

    max_raw_image_bytes: int | NotSet = NOT_SET_MARKER
    max_images_per_llm_request: int | NotSet = NOT_SET_MARKER
    max_total_raw_image_bytes_per_llm_request: int | NotSet = NOT_SET_MARKER

    def _check_field(self, name: str, value: Any) -> Any:
        return check_int(name, value, minimum=1, maximum=IMAGE_INPUT_ABSOLUTE_MAXIMA[name])

    def _check_fields(self) -> None:
        single, total = self.max_raw_image_bytes, self.max_total_raw_image_bytes_per_llm_request
        if isinstance(single, int) and isinstance(total, int) and single > total:
            raise ValueError(
                "max_raw_image_bytes must not exceed max_total_raw_image_bytes_per_llm_request "
                f"({single} > {total})"
            )

    def resolve(self) -> _ResolvedImageInputLimitConfig:
        """Fill every unset field from the SDK defaults."""
        return _ResolvedImageInputLimitConfig(**{**IMAGE_INPUT_LIMIT_DEFAULTS, **self.set_fields()})


ABSOLUTE_IMAGE_INPUT_LIMIT_CONFIG: Final = _ResolvedImageInputLimitConfig(
    **IMAGE_INPUT_ABSOLUTE_MAXIMA
)
"""The SDK's absolute maxima as a resolved configuration."""


def validate_image_request(
    messages: Sequence[Message], config: _ResolvedImageInputLimitConfig
) -> None:
    """Raise ValueError, naming the limit, when the images in ``messages`` exceed ``config``.

    Checks, before any LLM call: the size of each image, the number of images and their total
    size in the request. Images whose bytes are not loaded count as zero bytes.
    """
    sizes = [
        len(part.bytes or b"")
        for message in messages
        if not isinstance(message.content, str)
        for part in message.content
        if isinstance(part, ImageContent)
    ]
    limit = config.max_images_per_llm_request
    if len(sizes) > limit:
        raise ValueError(
            f"max_images_per_llm_request: the request has {len(sizes)} images, limit {limit}"
        )
    limit = config.max_raw_image_bytes
    for size in sizes:
        if size > limit:
            raise ValueError(f"max_raw_image_bytes: an image has {size} bytes, limit {limit}")
    total, limit = sum(sizes), config.max_total_raw_image_bytes_per_llm_request
    if total > limit:
        raise ValueError(
            f"max_total_raw_image_bytes_per_llm_request: the request has {total} image bytes, "
            f"limit {limit}"
        )


ResolvedImageInputLimitConfig = _ResolvedImageInputLimitConfig
"""Image input limits with every field resolved (the name the rest of the SDK uses)."""

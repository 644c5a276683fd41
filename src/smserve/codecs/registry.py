"""CodecRegistry: codecs keyed by canonical media type, plus Content-Type/Accept resolution.

Resolution is a pure function of the header value, the default and the registered codecs, and
clients send the same few header values over and over, so each result is remembered per
(header, default) pair in a small dict: a repeat costs one lookup instead of parsing and
negotiating again. Failures (415, 406) are not remembered. The dicts are bounded (emptied
when full, so odd values a client makes up cannot grow them) and emptied whenever a codec is
registered."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from smserve.codecs.base import Decoder, Encoder
from smserve.errors import UnsupportedMediaType
from smserve.media import MediaType, negotiate, parse_media_type

CACHE_SIZE = 128  # distinct (header, default) pairs remembered per direction
T = TypeVar("T")


class CodecRegistry:
    """An explicit, instance-scoped registry; registering a codec twice raises KeyError."""

    def __init__(self, decoders: Iterable[Decoder] = (), encoders: Iterable[Encoder] = ()) -> None:
        self._decoders: dict[str, Decoder] = {}
        self._encoders: dict[str, Encoder] = {}
        self._decoder_cache: dict[tuple[str | None, str], tuple[Decoder, MediaType]] = {}
        self._encoder_cache: dict[tuple[str | None, str], Encoder] = {}
        for decoder in decoders:
            self.add_decoder(decoder)
        for encoder in encoders:
            self.add_encoder(encoder)

    def add_decoder(self, decoder: Decoder, *, replace: bool = False) -> None:
        if not replace and decoder.media_type in self._decoders:
            raise KeyError(f"a decoder for {decoder.media_type} is already registered")
        self._decoders[decoder.media_type] = decoder
        self._decoder_cache.clear()

    def add_encoder(self, encoder: Encoder, *, replace: bool = False) -> None:
        if not replace and encoder.media_type in self._encoders:
            raise KeyError(f"an encoder for {encoder.media_type} is already registered")
        self._encoders[encoder.media_type] = encoder
        self._encoder_cache.clear()

    @property
    def decodable(self) -> tuple[str, ...]:
        """Media types accepted as request bodies, in registration order."""
        return tuple(self._decoders)

    @property
    def offers(self) -> tuple[str, ...]:
        """Media types a response can be written in, in registration order."""
        return tuple(self._encoders)

    def decoder_for(self, content_type: str | None, default: str) -> tuple[Decoder, MediaType]:
        """The decoder for a Content-Type header (``default`` when it is missing or empty).

        Raises UnsupportedMediaType (415) naming what is supported.
        """
        key = (content_type, default)
        found = self._decoder_cache.get(key)
        if found is None:
            found = self._find_decoder(content_type, default)
            _remember(self._decoder_cache, key, found)
        return found

    def encoder_for(self, accept: str | None, default: str) -> Encoder:
        """The encoder chosen by Accept negotiation; raises NotAcceptable (406)."""
        key = (accept, default)
        found = self._encoder_cache.get(key)
        if found is None:
            found = self._encoders[negotiate(accept, self.offers, default)]
            _remember(self._encoder_cache, key, found)
        return found

    def _find_decoder(self, content_type: str | None, default: str) -> tuple[Decoder, MediaType]:
        media = parse_media_type(content_type) if content_type and content_type.strip() else None
        media = media or MediaType(default)
        decoder = self._decoders.get(media.essence)
        if decoder is None:
            raise UnsupportedMediaType(
                f"Content-Type {content_type!r} is not supported; "
                f"supported: {', '.join(self.decodable)}"
            )
        _check_parameters(decoder, media, content_type or default)
        return decoder, media


def _remember(
    cache: dict[tuple[str | None, str], T], key: tuple[str | None, str], value: T
) -> None:
    if len(cache) >= CACHE_SIZE:
        cache.clear()
    cache[key] = value


def _check_parameters(decoder: Decoder, media: MediaType, header: str) -> None:
    for name, value in media.params.items():
        if name not in decoder.parameters:
            raise UnsupportedMediaType(
                f"Content-Type {header!r}: parameter {name!r} is not supported for "
                f"{decoder.media_type}; accepted: {', '.join(sorted(decoder.parameters)) or 'none'}"
            )
        allowed = decoder.parameters[name]
        if allowed is not None and value.lower() not in allowed:
            raise UnsupportedMediaType(
                f"Content-Type {header!r}: {name}={value} is not supported; "
                f"accepted values: {', '.join(sorted(allowed))}"
            )

"""CodecRegistry: codecs keyed by canonical media type, plus Content-Type/Accept resolution."""

from __future__ import annotations

from collections.abc import Iterable

from smserve.codecs.base import Decoder, Encoder
from smserve.errors import UnsupportedMediaType
from smserve.media import MediaType, negotiate, parse_media_type


class CodecRegistry:
    """An explicit, instance-scoped registry; registering a codec twice raises KeyError."""

    def __init__(self, decoders: Iterable[Decoder] = (), encoders: Iterable[Encoder] = ()) -> None:
        self._decoders: dict[str, Decoder] = {}
        self._encoders: dict[str, Encoder] = {}
        for decoder in decoders:
            self.add_decoder(decoder)
        for encoder in encoders:
            self.add_encoder(encoder)

    def add_decoder(self, decoder: Decoder, *, replace: bool = False) -> None:
        if not replace and decoder.media_type in self._decoders:
            raise KeyError(f"a decoder for {decoder.media_type} is already registered")
        self._decoders[decoder.media_type] = decoder

    def add_encoder(self, encoder: Encoder, *, replace: bool = False) -> None:
        if not replace and encoder.media_type in self._encoders:
            raise KeyError(f"an encoder for {encoder.media_type} is already registered")
        self._encoders[encoder.media_type] = encoder

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

    def encoder_for(self, accept: str | None, default: str) -> Encoder:
        """The encoder chosen by Accept negotiation; raises NotAcceptable (406)."""
        return self._encoders[negotiate(accept, self.offers, default)]


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

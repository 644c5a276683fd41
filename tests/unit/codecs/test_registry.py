"""default_registry: which codecs it lists, Content-Type resolution and parameter checks."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from smserve.codecs import CodecRegistry, Decoder, Encoder, default_registry
from smserve.codecs.csv import CsvCodec
from smserve.codecs.json import JsonCodec
from smserve.codecs.jsonlines import JsonLinesCodec
from smserve.codecs.libsvm import LibsvmCodec
from smserve.config import Settings
from smserve.errors import UnsupportedMediaType
from smserve.media import CSV, JSON, JSONLINES, LIBSVM
from smserve.types import Prediction

TEXT_CODECS = [CsvCodec(), JsonCodec(), JsonLinesCodec(), LibsvmCodec()]


@pytest.fixture
def registry() -> CodecRegistry:
    return default_registry(Settings())


def test_text_codecs_are_registered_in_order(registry: CodecRegistry) -> None:
    assert registry.decodable[:4] == (CSV, JSON, JSONLINES, LIBSVM)
    assert registry.offers[:3] == (JSON, JSONLINES, CSV)
    assert LIBSVM not in registry.offers  # libsvm is input only


@pytest.mark.parametrize("codec", TEXT_CODECS, ids=lambda c: type(c).__name__)
def test_codecs_implement_the_protocols(codec: object) -> None:
    assert isinstance(codec, Decoder)
    assert isinstance(codec, Encoder) != isinstance(codec, LibsvmCodec)


@pytest.mark.parametrize("base", ["0", "1", "auto"])
def test_libsvm_index_base_comes_from_settings(base: str) -> None:
    decoder, _ = default_registry(Settings(libsvm_index_base=base)).decoder_for("text/libsvm", CSV)
    assert isinstance(decoder, LibsvmCodec)
    assert decoder.index_base == base


@pytest.mark.parametrize(
    ("content_type", "essence"),
    [
        pytest.param("text/csv", CSV, id="text/csv"),
        pytest.param("Text/CSV; label_size=0", CSV, id="case and label_size=0"),
        pytest.param("text/csv;label_size=1", CSV, id="label_size=1"),
        pytest.param("text/csv; charset=UTF-8", CSV, id="charset"),
        pytest.param("csv", CSV, id="short name"),
        pytest.param("application/JSON", JSON, id="json case"),
        pytest.param('application/json; charset="utf-8"', JSON, id="quoted charset"),
        pytest.param("application/x-ndjson", JSONLINES, id="ndjson alias"),
        pytest.param("text/x-libsvm", LIBSVM, id="x-libsvm alias"),
        pytest.param("libsvm", LIBSVM, id="libsvm short name"),
        pytest.param(None, CSV, id="missing: the default"),
        pytest.param("", CSV, id="empty: the default"),
    ],
)
def test_decoder_for(registry: CodecRegistry, content_type: str | None, essence: str) -> None:
    decoder, media = registry.decoder_for(content_type, CSV)
    assert decoder.media_type == media.essence == essence


@pytest.mark.parametrize(
    ("content_type", "message"),
    [
        pytest.param("text/csv; label_size=2", "label_size=2 is not supported", id="label_size=2"),
        pytest.param("text/csv; charset=latin-1", "charset=latin-1 is not supported", id="latin-1"),
        pytest.param(
            "text/csv; header=present", "parameter 'header' is not supported", id="header"
        ),
        pytest.param(
            "application/json; label_size=0", "parameter 'label_size'", id="json label_size"
        ),
        pytest.param("text/plain", "is not supported; supported: text/csv", id="text/plain"),
        pytest.param("label_size=1; text/csv", "is not a media type", id="parameter first"),
    ],
)
def test_decoder_for_rejects(registry: CodecRegistry, content_type: str, message: str) -> None:
    with pytest.raises(UnsupportedMediaType, match=re.escape(message)):
        registry.decoder_for(content_type, CSV)


def test_negotiated_encoder_writes_its_media_type(registry: CodecRegistry) -> None:
    prediction = Prediction({"score": np.array([0.5], dtype=np.float32)})
    for accept, body in [
        ("application/json", b'{"predictions":[{"score":0.5}]}'),
        ("application/jsonlines", b'{"score":0.5}\n'),
        ("text/csv", b"0.5\n"),
    ]:
        encoder = registry.encoder_for(accept, CSV)
        assert encoder.media_type == accept
        assert encoder.encode(prediction) == body


def test_the_default_registry_loads_what_the_columnar_casts_import_at_first_use() -> None:
    """Importing the columnar helpers (as training does) leaves ``pyarrow.compute`` out; the
    server's registry loads it with the codecs, so that no request waits for it. A fresh
    interpreter, since this one has imported it already."""
    report = (
        "import sys\n"
        "import smserve.codecs.columnar\n"
        "before = 'pyarrow.compute' in sys.modules\n"
        "from smserve.codecs import default_registry\n"
        "from smserve.config import Settings\n"
        "default_registry(Settings())\n"
        "print(before, 'pyarrow.compute' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", report], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]

"""Score one mini-batch with the endpoint's own InferenceService in batch mode, so every
answer has exactly the bytes ``POST /invocations`` returns with ``SAGEMAKER_BATCH=true``.

When a mini-batch fails (any client error, e.g. a bad cell or a wrong column count), its
records are scored one by one to find the bad ones: the first fails the file with its record
number (``--on-error fail``), or each is answered with an error line and the rest go on
(``--on-error skip``). Good mini-batches never take that path. It holds no file or process
state; ``engine`` and ``worker`` do."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from smserve.algorithms.loading import load_algorithm
from smserve.codecs import default_registry
from smserve.config import Settings
from smserve.errors import ConfigError, PredictionError, ServingError
from smserve.media import RECORDIO
from smserve.scoring.join import Joiner, joiner
from smserve.scoring.options import Plan
from smserve.scoring.split import Chunk, records_of
from smserve.service import InferenceService


@dataclass(frozen=True, slots=True)
class RecordError:
    """A record that could not be scored; ``record`` is its 1-based number in the file (its
    line number with ``--split-type Line``), or in the shard until the engine renumbers it.
    With ``--on-error skip``, its error line is ``length`` bytes at byte ``at`` of the answer
    (``length`` 0: RecordIO answers get no line)."""

    record: int
    message: str
    at: int = 0
    length: int = 0

    def line(self) -> bytes:
        """The documented error line that takes the record's place with ``--on-error skip``."""
        return orjson.dumps({"error": self.message, "record": self.record}) + b"\n"


@dataclass(frozen=True, slots=True)
class Scored:
    """The answer to one mini-batch. ``failed``: the file fails at ``errors[0]``."""

    body: bytes
    n_records: int
    input_bytes: int
    errors: tuple[RecordError, ...] = ()
    failed: bool = False


def build_service(settings: Settings) -> InferenceService:
    """The endpoint's service for ``settings`` (loads the model; raises StartupError)."""
    return InferenceService(load_algorithm(settings), default_registry(settings), settings)


class Scorer:
    """Answers mini-batches for one Plan. Raises ClientError (415/406) at construction when
    the plan's types cannot be read or written, and ConfigError for an impossible join."""

    def __init__(self, service: InferenceService, plan: Plan) -> None:
        self.service, self.plan = service, plan
        registry = service.registry
        _, media = registry.decoder_for(plan.content_type, service.algorithm.default_content_type)
        self.input_type = media.essence
        self.output_type = registry.encoder_for(plan.accept, service.default_accept).media_type
        self._join = self._joiner()
        # RecordIO answers are framed records: concatenated, never given a newline.
        self._line_assembly = plan.assemble_with == "Line" and self.output_type != RECORDIO

    def score(self, chunk: Chunk) -> Scored:
        try:
            return Scored(self._answer(chunk.body), chunk.n_records, len(chunk.body))
        except ServingError:
            return self._one_by_one(chunk)

    def _joiner(self) -> Joiner | None:
        if self.plan.join_source != "Input":
            return None
        if self.plan.split_type != "Line":
            raise ConfigError("--join-source Input needs --split-type Line (one record a line)")
        return joiner(self.input_type, self.output_type)

    def _answer(self, body: bytes) -> bytes:
        reply = self.service.invoke(body, self.plan.content_type, self.plan.accept)
        answer = b"" if reply is None else reply.body
        if self._join is not None:
            answer = self._joined(body, answer)
        if self._line_assembly and answer and not answer.endswith(b"\n"):
            answer += b"\n"
        return answer

    def _joined(self, body: bytes, answer: bytes) -> bytes:
        assert self._join is not None
        records, lines = records_of(body, "Line"), answer.split(b"\n")[:-1]
        if len(records) != len(lines):
            raise PredictionError(f"{len(lines)} answer lines for {len(records)} records")
        return b"".join(line + b"\n" for line in self._join(records, lines))

    def _one_by_one(self, chunk: Chunk) -> Scored:
        answers: list[bytes] = []
        errors: list[RecordError] = []
        at = 0
        for index, record in enumerate(records_of(chunk.body, self.plan.split_type)):
            try:
                answers.append(self._answer(record))
            except ServingError as exc:
                error = RecordError(chunk.first_record + index, exc.message)
                if self.plan.on_error == "fail":
                    return Scored(b"", chunk.n_records, len(chunk.body), (error,), failed=True)
                answers.append(b"" if self.output_type == RECORDIO else error.line())
                errors.append(RecordError(error.record, error.message, at, len(answers[-1])))
            at += len(answers[-1])
        return Scored(b"".join(answers), chunk.n_records, len(chunk.body), tuple(errors))

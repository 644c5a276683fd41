"""Multi-model containment through the HTTP routes: nothing outside SMSERVE_MODELS_DIR is
opened, listed or read, whatever the model folder's links, the url's ``..`` segments or
absolute paths; model names outside the safe set are 400s naming the rule."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http.app import create_app
from smserve.repository import runtime
from tests.containment import ListingProbe, OpenProbe

CSV_ROW = b"0,0,0,0\n"
TARGET = "X-Amzn-SageMaker-Target-Model"


@pytest.fixture
def models_dir(tmp_path: Path, kmeans_model_dir: Path) -> Path:
    root = tmp_path / "models"
    shutil.copytree(kmeans_model_dir, root / "alpha" / "model")
    return root


@pytest.fixture
def outside(tmp_path: Path, kmeans_model_dir: Path) -> Path:
    """A valid k-means model folder outside the models directory."""
    return Path(shutil.copytree(kmeans_model_dir, tmp_path / "outside" / "model"))


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[OpenProbe]:
    (tmp_path / "secrets").mkdir()
    probe = OpenProbe(tmp_path / "secrets" / "passwd")
    yield probe
    probe.release()


@pytest.fixture
def listing() -> Iterator[type[ListingProbe]]:
    yield ListingProbe.start()
    ListingProbe.stop()


@pytest.fixture
def settings(tmp_path: Path, models_dir: Path) -> Settings:
    base = Settings(multi_model=True, models_dir=models_dir, runtime_dir=tmp_path / "run")
    return runtime.prepare(base)


@pytest.fixture
def client(settings: Settings) -> FlaskClient:
    return create_app(settings).test_client()


def load(client: FlaskClient, name: str, url: str) -> tuple[int, str]:
    response = client.post("/models", json={"model_name": name, "url": url})
    return response.status_code, response.get_json().get("error", "")


def registered(client: FlaskClient) -> list[str]:
    return [m["modelName"] for m in client.get("/models").get_json()["models"]]


@pytest.mark.parametrize("name", ["model_algo-1", "centroids.npy"])
def test_a_model_file_linked_outside_is_400_and_never_opened(
    client: FlaskClient, models_dir: Path, probe: OpenProbe, name: str
) -> None:
    (models_dir / "evil").mkdir()
    (models_dir / "evil" / name).symlink_to(probe.path)
    status, error = load(client, "evil", "evil")
    assert status == 400
    # The link's target is named by its last part only: a load message carries no path
    # beyond the model's own files (smserve.failures.load_message)
    assert f"evil/{name} is a symbolic link to {probe.path.name}, outside" in error
    assert str(probe.path.parent) not in error
    assert not probe.was_opened()
    assert registered(client) == []


def test_a_model_file_linked_outside_among_good_ones_is_400(
    client: FlaskClient, models_dir: Path, outside: Path
) -> None:
    folder = models_dir / "mixed"
    shutil.copytree(models_dir / "alpha" / "model", folder)
    (folder / "centroids.npy").symlink_to(outside / "model_algo-1")
    assert load(client, "mixed", "mixed")[0] == 400
    assert registered(client) == []


def test_a_model_folder_linked_outside_is_400_and_never_listed(
    client: FlaskClient, models_dir: Path, outside: Path, listing: type[ListingProbe]
) -> None:
    (models_dir / "elsewhere").symlink_to(outside)
    (models_dir / "nested").mkdir()
    (models_dir / "nested" / "model").symlink_to("../../outside/model")
    for url in ("elsewhere", "nested/model", str(models_dir / "elsewhere")):
        status, error = load(client, "x", url)
        assert status == 400
        assert "leads outside the models directory" in error
    assert listing.listed_outside(models_dir) == []
    assert registered(client) == []


@pytest.mark.parametrize(
    "url",
    ["../outside/model", "alpha/../../outside/model", "alpha/model/../../..", "/etc", "{out}"],
)
def test_urls_that_leave_the_models_directory_are_400(
    client: FlaskClient, outside: Path, listing: type[ListingProbe], url: str
) -> None:
    status, error = load(client, "x", url.format(out=outside))
    assert (status, "leads outside the models directory" in error) == (400, True)
    assert listing.listed_outside(outside.parent.parent / "models") == []


def test_links_and_dot_dots_that_stay_inside_are_served(
    client: FlaskClient, models_dir: Path
) -> None:
    (models_dir / "linked").symlink_to("alpha/model")
    (models_dir / "delta").mkdir()
    (models_dir / "delta" / "model_algo-1").symlink_to(models_dir / "alpha/model/model_algo-1")
    for name, url in [("a", "linked"), ("b", "delta"), ("c", "delta/../alpha/model")]:
        assert load(client, name, url) == (200, "")
        answer = client.post(f"/models/{name}/invoke", data=CSV_ROW, content_type="text/csv")
        assert answer.status_code == 200


def test_a_link_changed_after_registration_is_checked_again(
    settings: Settings, client: FlaskClient, models_dir: Path, probe: OpenProbe
) -> None:
    folder = Path(shutil.copytree(models_dir / "alpha" / "model", models_dir / "later"))
    assert load(client, "later", "later") == (200, "")
    (folder / "model_algo-1").unlink()
    (folder / "model_algo-1").symlink_to(probe.path)
    second_worker = create_app(settings).test_client()  # loads it on its first request
    answer = second_worker.post("/models/later/invoke", data=CSV_ROW, content_type="text/csv")
    assert answer.status_code == 503
    assert "outside" in answer.get_json()["error"]
    assert not probe.was_opened()


UNSAFE = ["..", "../x", "a/b", ".", "a\\b", "x..y", "tab\tname", "bell\x07", "\u202e", "a" * 1025]


@pytest.mark.parametrize("name", UNSAFE, ids=repr)
def test_unsafe_model_names_are_400_naming_the_rule(client: FlaskClient, name: str) -> None:
    status, error = load(client, name, "alpha/model")
    assert status == 400
    assert "a model name is 1 to 1024 printable characters without '/', '\\' or '..'" in error
    assert registered(client) == []


@pytest.mark.parametrize("name", ["..", "../alpha", "x..y", "a" * 1025], ids=repr)
def test_unsafe_names_are_400_on_every_route(client: FlaskClient, name: str) -> None:
    assert load(client, "alpha", "alpha/model")[0] == 200
    invoked = client.post(
        "/invocations", data=CSV_ROW, content_type="text/csv", headers={TARGET: name}
    )
    assert invoked.status_code == 400
    assert "a model name is" in invoked.get_json()["error"]
    quoted = name.replace("/", "%2F")
    assert client.get(f"/models/{quoted}").status_code in (400, 404)


def test_safe_names_in_full(client: FlaskClient) -> None:
    for name in ("model.tar.gz", "a" * 1024, "é-ünïcödé", "with space", "v1.2:x@y"):
        assert load(client, name, "alpha/model") == (200, "")
        headers = {TARGET: name} if name.isascii() else {}
        if headers:
            answer = client.post(
                "/invocations", data=CSV_ROW, content_type="text/csv", headers=headers
            )
            assert answer.status_code == 200
        assert client.delete(f"/models/{name}").status_code == 200

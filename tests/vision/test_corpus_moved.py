"""The corpus modules' old paths: same objects as trivium.vision.corpora, with a warning."""

from __future__ import annotations

import importlib

import pytest

MOVES = {
    "trivium.vision.corpus": "trivium.vision.corpora",
    "trivium.vision.detection_corpus": "trivium.vision.corpora.detection",
    "trivium.vision.corpus_assets": "trivium.vision.corpora.assets",
    "trivium.vision.corpus_build": "trivium.vision.corpora.build",
    "trivium.vision.corpus_shapes": "trivium.vision.corpora.shapes",
}


@pytest.mark.parametrize(("old", "new"), MOVES.items())
def test_every_public_name_reads_through_the_old_path_with_a_warning(old: str, new: str) -> None:
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    for name in new_module.__all__:
        with pytest.warns(
            DeprecationWarning, match=f"^{old} is deprecated: import {name} from {new}$"
        ):
            assert getattr(old_module, name) is getattr(new_module, name)


def test_the_old_names_of_the_examples_and_guides_still_import() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        from trivium.vision.corpus import build_detection_corpus, build_image_corpus

    from trivium.vision.corpora import build_detection_corpus as detection
    from trivium.vision.corpora import build_image_corpus as classification

    assert (build_image_corpus, build_detection_corpus) == (classification, detection)
    # The warning points at the line that imports, not at the alias module.
    assert {w.filename for w in caught} == {__file__}


@pytest.mark.parametrize("name", ["_photos", "no_such_name", "__test__"])
def test_private_and_unknown_names_are_not_served(name: str) -> None:
    module = importlib.import_module("trivium.vision.corpus_assets")
    with pytest.raises(
        AttributeError, match=f"'trivium.vision.corpus_assets' has no attribute '{name}'"
    ):
        getattr(module, name)


def test_the_backgrounds_ship_in_the_corpora_package() -> None:
    import importlib.resources

    folder = importlib.resources.files("trivium.vision.corpora") / "backgrounds"
    from trivium.vision.corpora import background_photos

    assert all((folder / name).is_file() for name in background_photos())
    assert not (importlib.resources.files("trivium.vision") / "corpus_backgrounds").is_dir()

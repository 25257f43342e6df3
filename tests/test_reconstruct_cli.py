"""python -m analysis.reconstruct: help, build, and a clean error for a bad claims file."""
from __future__ import annotations

import pytest

from analysis.reconstruct.__main__ import main
from support.paths import REPO as ROOT


def test_help_names_the_command(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "build" in capsys.readouterr().out


def test_bad_claims_file_is_a_clean_error(tmp_path, capsys):
    bad = tmp_path / "claims.yaml"
    bad.write_text("claims:\n- id: x\n  role: maybe\n", encoding="utf-8")
    assert main(["build", "--claims", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown role 'maybe'" in err and "Traceback" not in err


def test_build_writes_the_package(tmp_path, capsys):
    assert main(["build", "--claims", str(ROOT / "data/published/claims.yaml"), "--out", str(tmp_path / "v1")]) == 0
    assert (tmp_path / "v1" / "provenance.lock").is_file()
    assert "locked files" in capsys.readouterr().out

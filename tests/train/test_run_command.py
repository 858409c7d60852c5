"""`jaxparadigm run CONFIG` reaches run_experiment and prints where the report is."""

from pathlib import Path

import pytest
import yaml

from jaxparadigm.cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "configs"  # whatever the working directory


def test_run_command_writes_and_prints_the_report(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "tiny_cli",
                "model": {"hidden": [8]},
                "data": {"n_samples": 256, "batch_size": 32},
                "train": {"steps": 5, "eval_every": 5, "log_every": 5, "plots": False},
            }
        )
    )
    assert main(["run", str(config), f"out_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert f"report: {tmp_path / 'tiny_cli' / 'report.md'}" in out
    assert (tmp_path / "tiny_cli" / "report.md").read_text().startswith("# tiny_cli")


def test_run_command_reports_bad_config_in_one_line(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("name: bad\ntrain: {steps: many}\n")
    assert main(["run", str(config)]) == 2
    assert "config key 'train.steps'" in capsys.readouterr().err


@pytest.mark.slow
def test_default_config_end_to_end(tmp_path, capsys):
    assert main(["run", str(CONFIGS / "default.yaml"), f"out_dir={tmp_path}"]) == 0
    text = (tmp_path / "default" / "report.md").read_text()
    accuracy = float(text.split("accuracy = ")[1].split(",")[0])
    assert accuracy > 0.9

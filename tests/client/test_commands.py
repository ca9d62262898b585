"""karmada-place's commands are argparse subcommands: listed in --help, each with its own
--help and its own errors; placing a job needs no command but needs --job."""

from __future__ import annotations

import pytest

from scheduler_client.cli import EXIT_BAD_INPUT, main


def test_help_lists_the_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "commands (without one: place the job)" in out
    assert "doctor " in out and "summarize " in out


@pytest.mark.parametrize("command, required", [("doctor", "--policy POLICY.yaml --job JOB.yaml"),
                                               ("summarize", "[--clusters CLUSTERS.yaml]")])
def test_each_command_has_its_own_help(capsys, command, required):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: karmada-place {command} [-h] {required}")


@pytest.mark.parametrize("argv, message", [
    ([], "karmada-place: error: the following arguments are required: --job"),
    (["doctor", "--job", "j.yaml"], "karmada-place doctor: error: the following arguments are required: --policy"),
    (["doktor"], "karmada-place: error: argument [COMMAND]: invalid choice: 'doktor'"),
    (["summarize", "--job", "j.yaml"], "karmada-place summarize: error: unrecognized arguments: --job j.yaml"),
    (["--clusters", "c.yaml", "summarize"], "karmada-place: error: the command comes first: karmada-place summarize"),
])
def test_errors_name_the_command_and_the_argument(capsys, argv, message):
    assert main(argv) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_a_command_runs_its_own_code(capsys):
    # summarize without members: its own usage error, not the placement's missing --job.
    assert main(["summarize"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.strip() == "karmada-place: summarize needs --member NAME=FILE"

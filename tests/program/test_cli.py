"""`genericjob-controller` flags and GENERICJOB_* environment variables.

The flags, their errors and the help are checked in-process (`main()` with an argv, as the console script calls
it); a few tests run the console script itself, so that the real entry point is covered: it starts, its `--help`
prints, a flag error exits 2 with its message, and `run` without a cluster exits 1."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib import metadata

import pytest

from controller import __main__ as entry
from controller.cmd import cli
from controller.jobs.execution.reconciler import STUCK_TERMINATING_AFTER
from controller.runtime import manager
from controller.runtime.flags import BooleanFlag

from .subprocesses import CLI


def parse(*argv: str, **environ: str):
    return cli.parse_args(["run", *argv], environ)


def main(capsys, *argv: str) -> tuple[int | str | None, str, str]:
    """The program's main() with `argv`, as `genericjob-controller ARGV...` runs it, to its exit: the exit code (of
    the SystemExit that ends every usage error, --help and --version), stdout and stderr."""
    with pytest.raises(SystemExit) as exit_info:
        entry.main(list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_defaults(monkeypatch, tmp_path):
    monkeypatch.setattr(manager, "SERVICE_ACCOUNT_DIR", str(tmp_path / "nowhere"))
    args = parse()
    config = cli.manager_config(args)
    assert (args.kubeconfig, args.log_level, args.log_format) == (None, "info", None)
    assert config.controller.watched_namespaces() == () and config.controller.workers == 4
    assert (config.controller.qps, config.controller.burst) == (20.0, 30)
    assert config.controller.shutdown_timeout == 10.0
    assert config.controller.stuck_terminating_after == STUCK_TERMINATING_AFTER
    election = config.leader_election
    assert (election.lease_name, election.namespace) == ("genericjob-controller", "default")
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15.0, 10.0, 2.0)
    assert (config.metrics_address, config.health_address, config.sync_timeout) == (":8443", ":8081", 120.0)
    assert config.metrics_secure and config.metrics_cert_dir is None


def test_every_flag():
    args = parse("--kubeconfig", "/k", "--namespace", "team", "--workers", "8", "--qps", "50", "--burst", "60",
                 "--lease-name", "l", "--lease-namespace", "ops", "--lease-duration", "30", "--renew-deadline", "20",
                 "--retry-period", "4", "--metrics-address", "127.0.0.1:9000", "--health-address", ":9001",
                 "--log-level", "debug", "--log-format", "console", "--sync-timeout", "5", "--shutdown-timeout", "7",
                 "--stuck-terminating-after", "90")
    config = cli.manager_config(args)
    assert args.kubeconfig == "/k" and args.log_level == "debug" and cli.log_format(args) == "console"
    assert config.controller.watched_namespaces() == ("team",) and config.controller.workers == 8
    assert (config.controller.qps, config.controller.burst) == (50.0, 60)
    assert (config.controller.shutdown_timeout, config.controller.stuck_terminating_after) == (7.0, 90.0)
    election = config.leader_election
    assert (election.lease_name, election.namespace) == ("l", "ops")
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (30.0, 20.0, 4.0)
    assert (config.metrics_address, config.health_address, config.sync_timeout) == ("127.0.0.1:9000", ":9001", 5.0)


def test_environment_variables_set_flags_and_flags_win():
    env = {"GENERICJOB_WORKERS": "7", "GENERICJOB_NAMESPACE": "team", "GENERICJOB_LEADER_ELECT": "false",
           "GENERICJOB_LOG_FORMAT": "json", "GENERICJOB_QPS": "2.5", "GENERICJOB_METRICS_ADDRESS": ":9100"}
    config = cli.manager_config(parse(**env))
    assert config.controller.workers == 7 and config.controller.watched_namespaces() == ("team",)
    assert config.leader_election is None and config.controller.qps == 2.5 and config.metrics_address == ":9100"
    assert cli.log_format(parse(**env)) == "json"
    flagged = parse("--workers", "2", "--leader-elect", "--log-format", "console", **env)
    assert flagged.workers == 2 and flagged.leader_elect is True and flagged.log_format == "console"


@pytest.mark.parametrize(("text", "value"), [("1", True), ("TRUE", True), ("yes", True), ("on", True),
                                             ("0", False), ("False", False), ("no", False), ("off", False)])
def test_boolean_variables(text, value):
    assert parse(GENERICJOB_LEADER_ELECT=text).leader_elect is value


@pytest.mark.parametrize(("env", "message"), [
    ({"GENERICJOB_WORKERS": "many"}, "GENERICJOB_WORKERS: invalid value 'many'"),
    ({"GENERICJOB_WORKERS": "0"}, "GENERICJOB_WORKERS: invalid value '0'"),
    ({"GENERICJOB_LEADER_ELECT": "maybe"}, "GENERICJOB_LEADER_ELECT: invalid value"),
    ({"GENERICJOB_LOG_LEVEL": "loud"}, "GENERICJOB_LOG_LEVEL: 'loud' is not one of debug, info, warning, error"),
])
def test_invalid_variables_are_usage_errors(capsys, env, message):
    with pytest.raises(SystemExit) as exit_info:
        parse(**env)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--renew-deadline", "20"], "lease_duration must be greater than renew_deadline"),
    (["--retry-period", "9"], "renew_deadline must be greater than retry_period"),
    (["--lease-duration", "15.5"], "whole number of seconds"),
    (["--metrics-address", "localhost"], "invalid address"),
    (["--workers", "-1"], "invalid positive integer value"),
    (["--log-format", "xml"], "invalid choice"),
])
def test_invalid_flags_are_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        parse(*argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_timings_are_not_checked_without_leader_election():
    assert cli.manager_config(parse("--no-leader-elect", "--renew-deadline", "99")).leader_election is None


def test_lease_namespace_defaults_to_the_pods_namespace(monkeypatch, tmp_path):
    (tmp_path / "namespace").write_text("genericjob-system\n")
    monkeypatch.setattr(manager, "SERVICE_ACCOUNT_DIR", str(tmp_path))
    assert cli.manager_config(parse()).leader_election.namespace == "genericjob-system"
    assert cli.manager_config(parse("--lease-namespace", "x")).leader_election.namespace == "x"


def test_log_format_defaults_to_json_in_a_cluster(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert cli.log_format(parse()) == "console"
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert cli.log_format(parse()) == "json"
    assert cli.log_format(parse("--log-format", "console")) == "console"


def test_help_names_each_variable(capsys):
    with pytest.raises(SystemExit):
        parse("--help")
    out = capsys.readouterr().out
    for name in ("GENERICJOB_WORKERS", "GENERICJOB_LEADER_ELECT", "GENERICJOB_LEASE_NAMESPACE",
                 "GENERICJOB_STUCK_TERMINATING_AFTER"):
        assert name in out


def test_local_says_why_when_it_is_unavailable(monkeypatch, capsys):
    unavailable = "ModuleNotFoundError: No module named 'controller.devtools.local'"
    monkeypatch.setattr(cli, "load_local", lambda: (None, unavailable))
    assert entry.main(["local", "--apply", "job.yaml"]) == 2
    assert "the `local` command is not available" in capsys.readouterr().err
    assert parse().command == "run"  # run is unaffected


@pytest.mark.slow  # the console script
def test_console_script():
    done = subprocess.run([str(CLI), "run", "--help"], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0 and "--leader-elect" in done.stdout
    done = subprocess.run([str(CLI)], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and "{run,local}" in done.stderr


@pytest.mark.slow  # the console script
def test_without_a_cluster_configuration_run_exits_1(tmp_path):
    done = subprocess.run([str(CLI), "run", "--kubeconfig", str(tmp_path / "missing"), "--log-format", "json"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1 and "no usable cluster configuration" in done.stderr


@pytest.mark.slow  # a fresh interpreter
def test_run_loads_neither_localcluster_nor_the_local_command():
    """`run` parses its flags and builds its program without importing an API server (localcluster) or
    `controller.devtools.local`; the informers' listers use only `apimachinery.selectors`. `local` still gets
    its own flags."""
    code = ("import sys\n"
            "from controller.cmd import cli\n"
            "from controller.runtime import manager\n"
            "args = cli.parse_args(['run', '--no-leader-elect', '--workers', '2'])\n"
            "assert args.workers == 2, args\n"
            "heavy = sorted(m for m in ('localcluster', 'localcluster.cluster', 'localcluster.endpoints.http',\n"
            "                           'controller.devtools.local', 'celpy') if m in sys.modules)\n"
            "assert not heavy, heavy\n"
            "assert cli.parse_args(['local', '--apply', 'job.yaml']).apply\n"
            "assert 'controller.devtools.local' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_namespace_takes_a_list_and_may_be_repeated():
    config = cli.manager_config(parse("--namespace", "a,b", "--namespace", " c ,a"))
    assert config.controller.watched_namespaces() == ("a", "b", "c")
    assert cli.manager_config(parse("--namespace", "")).controller.watched_namespaces() == ()


def test_namespace_list_from_the_environment_is_replaced_by_the_flag():
    args = cli.parse_args(["run", "--namespace", "x"], environ={"GENERICJOB_NAMESPACE": "a,b"})
    assert cli.manager_config(args).controller.watched_namespaces() == ("x",)
    args = cli.parse_args(["run"], environ={"GENERICJOB_NAMESPACE": "a,b"})
    assert cli.manager_config(args).controller.watched_namespaces() == ("a", "b")


def test_a_namespace_that_is_no_dns_label_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.parse_args(["run", "--namespace", "team-a,Team_B"])
    assert exit_info.value.code == 2
    assert "namespace list" in capsys.readouterr().err


def test_secure_metrics_on_the_health_address_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse("--metrics-address", ":9000", "--health-address", ":9000")
    assert exit_info.value.code == 2
    assert "--no-metrics-secure" in capsys.readouterr().err
    plain = cli.manager_config(parse("--metrics-address", ":9000", "--health-address", ":9000", "--no-metrics-secure"))
    assert not plain.metrics_secure and plain.metrics_address == plain.health_address == ":9000"


def boolean_flags(command: str) -> list[argparse.Action]:
    parser = cli.build_parser({}).commands[command]
    return [a for a in parser._actions if isinstance(a, BooleanFlag)]


@pytest.mark.parametrize("command", ["run", "local"])
def test_every_boolean_flag_takes_true_or_false_as_go_flags_do(command):
    """`--leader-elect=false` is how manifests written for Go controllers pass booleans."""
    parser = cli.build_parser({}).commands[command]
    switches = [a for a in parser._actions if a.option_strings and a.nargs == 0 and a.dest != "help"]
    assert not switches, f"flags that cannot take =true|false: {[a.option_strings for a in switches]}"
    flags = boolean_flags(command)
    assert flags
    for action in flags:
        name = action.option_strings[0]
        for words, value in ([f"{name}=false"], False), ([f"{name}=true"], True), ([name], True), \
                ([f"{name}=0"], False), ([name, "off"], False):
            assert getattr(cli.parse_args([command, *words], {}), action.dest) is value, words
        negation = f"--no-{name[2:]}"
        if negation in action.option_strings:
            assert getattr(cli.parse_args([command, negation], {}), action.dest) is False


def test_booleans_as_go_controllers_pass_them(capsys):
    args = cli.parse_args(["run", "--leader-elect=false", "--metrics-secure=false", "--log-format", "json"], {})
    assert args.leader_elect is False and args.metrics_secure is False
    code, out, err = main(capsys, "run", "--leader-elect=maybe")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == ("genericjob-controller run: error: argument --leader-elect/--no-leader-elect: "
                                    "invalid boolean (true or false) value: 'maybe'")


@pytest.mark.slow  # the console script
def test_a_flag_error_through_the_console_script_exits_2_with_its_message():
    """The console script passes its words to the parser as they are: a Go controller's `--flag=false` too."""
    done = subprocess.run([str(CLI), "run", "--leader-elect=false", "--metrics-secure=false", "--leader-elect=maybe"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == ("genericjob-controller run: error: argument --leader-elect/"
                                            "--no-leader-elect: invalid boolean (true or false) value: 'maybe'")


def test_version_is_the_packages(capsys):
    code, out, _err = main(capsys, "--version")
    assert code == 0
    assert out.strip() == f"genericjob-controller {metadata.version('genericjob-controller')}"


@pytest.mark.parametrize("command", ["run", "local"])
def test_each_help_line_states_its_default_once(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # one line a flag (argparse sizes its help to the terminal's COLUMNS)
    code, out, _err = main(capsys, command, "--help")
    assert code == 0
    options: list[str] = []  # each flag's entry: its first line and the deeper-indented ones after it
    for line in out.partition("options:")[2].splitlines():
        if line.startswith("  -"):
            options.append(line.strip())
        elif line.startswith("   ") and options:
            options[-1] += " " + line.strip()
    assert len(options) > 5
    for line in options:
        assert line.count("default") <= 1 + line.count("'default'"), line
        assert "(default: None)" not in line and "(default: ())" not in line, line
    assert any("--workers WORKERS" in line and "(default: 4)" in line for line in options)
    if command == "run":
        [elect] = [line for line in options if line.startswith("--leader-elect")]
        assert elect.startswith("--leader-elect[=true|false], --no-leader-elect take a Lease")
        assert "(default: true)" in elect
        [kubeconfig] = [line for line in options if line.startswith("--kubeconfig")]
        assert "$KUBECONFIG, then in-cluster config, then ~/.kube/config" in kubeconfig  # the code's order


@pytest.mark.parametrize(("argv", "line"), [
    (["--bogus"], "genericjob-controller: error: unrecognized arguments: --bogus"),
    (["run", "--bogus"], "genericjob-controller run: error: unrecognized arguments: --bogus"),
    (["local", "--bogus"], "genericjob-controller local: error: unrecognized arguments: --bogus"),
])
def test_an_unknown_flag_is_one_line_naming_it_and_exit_2(argv, line, capsys):
    """No usage dump of the whole program, and never "the following arguments are required" for a flag that is
    wrong: the one line names the flag, as the command that got it says it."""
    code, out, err = main(capsys, *argv)
    assert (code, err, out) == (2, line + "\n", "")


def test_no_command_is_still_a_usage_error_naming_the_commands(capsys):
    code, _out, err = main(capsys)
    assert code == 2
    assert err.splitlines()[-1] == "genericjob-controller: error: the following arguments are required: {run,local}"


def test_the_help_speaks_of_every_kind(capsys):
    code, out, _err = main(capsys, "--help")
    assert code == 0
    assert all(kind in out for kind in ("GenericJob", "TensorFlowTrainingJob")), out

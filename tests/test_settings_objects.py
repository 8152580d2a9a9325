"""The settings objects are filled from the option table: every field names a real option, its default is
one the option agrees with, and the value read is the table's checked value."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from test_settings import Given

from pytest_agentbench.benches.opencomputer.options import OpenComputerSettings, opencomputer_settings
from pytest_agentbench.benches.waa.settings import WAASettings
from pytest_agentbench.errors import ConfigError
from pytest_agentbench.plugin import options
from pytest_agentbench.plugin.bridge import ConfigSettings
from pytest_agentbench.plugin.run_settings import AuditSettings, Settings, settings_from_config
from pytest_agentbench.plugin.trials import TrialSettings
from pytest_agentbench.settings import CONVERT, from_settings, option, option_fields

SETTINGS_OBJECTS = (Settings, AuditSettings, TrialSettings, WAASettings, OpenComputerSettings)


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def problems(cls: type) -> list[str]:
    """What is wrong with how ``cls``'s fields map to the option table."""
    found = []
    mapped = {f.name for f, _ in option_fields(cls)}
    found += [f"{cls.__name__}.{f.name} names no option" for f in dataclasses.fields(cls) if f.name not in mapped]
    for field, dest in option_fields(cls):
        where = f"{cls.__name__}.{field.name}"
        opt = options.BY_DEST.get(dest)
        if opt is None:
            found.append(f"{where}: {dest!r} is not an option of the table")
            continue
        default, convert = _default(field), field.metadata[CONVERT]
        if default is dataclasses.MISSING:
            found.append(f"{where} has no default (the value when {opt.flag} is not given)")
            continue
        if opt.default is not None and default != (convert(opt.default) if convert else opt.default):
            found.append(f"{where} defaults to {default!r}, {opt.flag} to {opt.default!r}")
        if opt.kind == "flag" and default is not False:
            found.append(f"{where}: {opt.flag} is a flag, so the field's default must be False")
        if opt.kind == "list" and convert is None:
            found.append(f"{where}: {opt.flag} gives a list; the field needs a convert (a tuple...)")
        if opt.choices is not None and default is not None and default not in opt.choices:
            found.append(f"{where} defaults to {default!r}, not one of {opt.flag}'s {opt.choices}")
        if opt.parse is not None and isinstance(default, (int, float)) and not isinstance(default, bool):
            try:
                accepted = opt.check(str(default))
            except ValueError as exc:
                found.append(f"{where} defaults to {default!r}, which {opt.flag} refuses: {exc}")
            else:
                if (convert(accepted) if convert else accepted) != default:
                    found.append(f"{where} defaults to {default!r}, read back as {accepted!r}")
    return found


@pytest.mark.parametrize("cls", SETTINGS_OBJECTS, ids=lambda cls: cls.__name__)
def test_every_field_names_an_option_of_the_table_with_a_default_it_accepts(cls):
    assert problems(cls) == []


def test_the_check_finds_a_field_that_names_no_option_or_a_default_the_option_refuses():
    @dataclasses.dataclass(frozen=True)
    class Wrong:
        typo: int = option("trails", 1)
        trials: int = option("trials", 0)
        screenshots: str = option("screenshots", "sometimes")
        bench: tuple[str, ...] = option("bench", ())
        plain: int = 3

    assert problems(Wrong) == [
        "Wrong.plain names no option",
        "Wrong.typo: 'trails' is not an option of the table",
        "Wrong.trials defaults to 0, which --bench-trials refuses: --bench-trials must be >= 1, got 0",
        ("Wrong.screenshots defaults to 'sometimes', not one of --bench-screenshots's "
        "('off', 'only-on-failure', 'on')"),
        "Wrong.bench: --bench gives a list; the field needs a convert (a tuple...)",
    ]


def test_without_a_reader_every_field_has_its_default():
    assert from_settings(WAASettings, None) == WAASettings()
    assert opencomputer_settings(None) == OpenComputerSettings()
    assert from_settings(TrialSettings, Given()) == TrialSettings()


def test_values_are_taken_as_checked_and_converted():
    waa = from_settings(WAASettings, Given(waa_server="http://h:5", waa_settle=0.5, waa_ready_timeout=9.0,
                                           waa_download_allow=["A.example, b.example", "c.example"]))
    assert (waa.server_url, waa.settle, waa.ready_timeout, waa.step_pause) == ("http://h:5", 0.5, 9.0, 3.0)
    assert waa.download_allow == frozenset({"a.example", "b.example", "c.example"})
    oc = opencomputer_settings(Given(opencomputer_tasks="/t", opencomputer_timeout=5.0))
    assert (oc.tasks, oc.timeout, oc.harness) == (Path("/t"), 5.0, "auto")
    audit = from_settings(AuditSettings, Given(operators=["omit,extra", "omit"], audit_limit=0,
                                               ignore_fields=["a, b"]))
    assert (audit.operators, audit.limit, audit.ignore_fields) == (("omit", "extra"), None, ("a", "b"))
    assert from_settings(AuditSettings, Given()).limit == 20
    assert from_settings(TrialSettings, Given(trials=3, fail_on_regression=True), seed=7) == \
        TrialSettings(trials=3, seed=7, fail_on_regression=True)


def test_a_convert_that_refuses_the_value_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^unknown operator 'nope' in --audit-operators; known: "):
        from_settings(AuditSettings, Given(operators=["omit,nope"]))


def test_the_run_settings_come_from_the_command_line_and_the_ini_file(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\nagentbench_results_dir = out\nagentbench_bench_tasks = a b\n")
    config = pytester.parseconfig("--bench", "mock,mock", "--bench-limit", "3", "--bench-agent-script", "s.json")
    settings = settings_from_config(config)
    assert settings.benchmarks == ("mock",)
    assert (settings.tasks, settings.task_ids, settings.agent) == (3, ("a", "b"), "mock")
    assert settings.agent_script == Path("s.json")
    assert settings.results_dir == Path("out")
    assert settings.screenshots == "only-on-failure" and settings.inspect_log is None


def test_options_still_names_the_settings_objects():
    assert options.Settings is Settings and options.AuditSettings is AuditSettings
    assert options.settings_from_config is settings_from_config
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        options.Nope  # noqa: B018 - the attribute access is the test


def test_the_reader_gives_only_checked_values(pytester: pytest.Pytester):
    """A config pytest only parsed has not checked an option checked at configure time: the reader
    checks it, with the table's message, rather than hand library code the text."""
    reader = ConfigSettings(pytester.parseconfig("--bench-agent-timeout", "7.5", "--bench-trials", "2"))
    assert (reader.get("agent_timeout"), reader.get("trials")) == (7.5, 2)
    bad = ConfigSettings(pytester.parseconfig("--bench-regression-alpha", "5%"))
    with pytest.raises(ConfigError, match=r"^--bench-regression-alpha must be a probability between 0 and 1 "
                                          r"such as 0.05, got '5%'$"):
        bad.get("regression_alpha")


@pytest.mark.parametrize(("ini", "message"), [
    ("agentbench_regression_alpha = 1", ("ERROR: ini agentbench_regression_alpha: --bench-regression-alpha must be "
                                        "a probability between 0 and 1 such as 0.05, got '1'")),
    ("agentbench_agent_timeout = soon", ("ERROR: ini agentbench_agent_timeout: --bench-agent-timeout must be a "
                                        "number of seconds, got 'soon'")),
])
def test_a_bad_ini_value_is_one_usage_line_even_in_a_plain_run(run, pytester: pytest.Pytester, ini, message):
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x(): pass")
    result = run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.startswith("ERROR")] == [message]


REGISTERED = '''
from pytest_agentbench.errors import ConfigError

def make(config):
    raise ConfigError("--audit-split must name a split of strict: train, dev")

def pytest_agentbench_register_audit_adapters(registry):
    registry.register("strict", make)
'''


def test_a_registered_audit_adapter_s_config_error_is_the_usage_error_as_it_is(run, pytester):
    pytester.makeconftest(REGISTERED)
    result = run("--audit-verifier=strict")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.startswith("ERROR")] == [
        "ERROR: --audit-split must name a split of strict: train, dev"]

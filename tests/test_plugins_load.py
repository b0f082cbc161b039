"""load_plugins: import only what config selects, fail clearly, keep the host up (R-0.2,
R-0.3, R-14.2, R-14.4, R-14.8)."""

from __future__ import annotations

import pytest
from plugins_helpers import (
    ENGINE_GROUP,
    GOOD_ENGINE_SOURCE,
    PROVIDER_GROUP,
    FakeDist,
    FakeInstall,
    fake_installation,
)

from hermes_host import GuardState, SessionEvent, ShouldCompressRequest, hookimpl
from hermes_host.config import parse_config
from hermes_host.plugins import (
    EngineLoadError,
    PluginError,
    UnknownEngineError,
    load_plugins,
)

fake = pytest.fixture(fake_installation, name="fake")

LOUD = "raise RuntimeError('a plugin the config does not select must never be imported')\n"
BROKEN = "raise ImportError(\"acme_broken needs 'frobnicate', which is not installed\")\n"
NO_OPTIONS = '''
from hermes_host import hookimpl

class Plain:
    @hookimpl
    def compress(self, request):
        return None
'''
NOTES = '''
from hermes_host import hookimpl

class Notes:
    @hookimpl
    def on_pre_compress(self, request):
        return "remember: the deploy key rotates on Fridays"
'''


def _request(tokens: int) -> ShouldCompressRequest:
    return ShouldCompressRequest(
        session_id="s1",
        messages=[{"role": "user", "content": "hi"}],
        current_tokens=tokens,
        context_length=100_000,
        guards=GuardState(now=0.0),
    )


def _install(fake: FakeInstall) -> None:
    fake.add(
        FakeDist(
            "acme-good",
            "2.0.1",
            {
                ENGINE_GROUP: {"alpha": "acme_good:GoodEngine", "plain": "acme_plain:Plain"},
                PROVIDER_GROUP: {"notes": "acme_notes:Notes"},
            },
            {"acme_good": GOOD_ENGINE_SOURCE, "acme_plain": NO_OPTIONS, "acme_notes": NOTES},
        )
    )
    fake.add(FakeDist("acme-loud", "0.1", {ENGINE_GROUP: {"loud": "acme_loud:E"}},
                      {"acme_loud": LOUD}))
    fake.add(FakeDist("acme-broken", "0.0.7", {ENGINE_GROUP: {"broken": "acme_broken:E"},
                                               PROVIDER_GROUP: {"brittle": "acme_broken:P"}},
                      {"acme_broken": BROKEN}))
    fake.activate()


def test_only_selected_plugins_are_imported_and_registered_r0_2(fake: FakeInstall) -> None:
    _install(fake)
    cfg = parse_config({"context": {"engine": "alpha"}, "memory": {"providers": ["notes"]}})
    loaded = load_plugins(cfg)
    assert list(loaded.engines) == ["alpha"] and list(loaded.providers) == ["notes"]
    assert loaded.pm.get_plugin("alpha") is loaded.engines["alpha"]
    assert loaded.pm.get_plugin("notes") is loaded.providers["notes"]
    assert not fake.imported("acme_loud") and not fake.imported("acme_broken")
    status = {i.name: i.status for i in loaded.infos}
    assert status["alpha"] == "loaded" and status["loud"] == "not loaded"
    alpha = next(i for i in loaded.infos if i.name == "alpha")
    assert alpha.hooks == ["should_compress", "compress"]
    assert loaded.failures == []


def test_engine_options_are_passed_to_the_constructor_r14_2(fake: FakeInstall) -> None:
    _install(fake)
    cfg = parse_config(
        {"context": {"engine": "alpha"}, "memory": {"providers": []},
         "engines": {"alpha": {"min_tokens": 50}}}
    )
    loaded = load_plugins(cfg)
    assert loaded.engines["alpha"].min_tokens == 50  # type: ignore[attr-defined]
    assert loaded.pm.hook.should_compress(request=_request(60)).compress is True
    assert loaded.pm.hook.should_compress(request=_request(40)).reason == "below_threshold"


def test_options_for_an_engine_that_takes_none_are_an_error(fake: FakeInstall) -> None:
    _install(fake)
    cfg = parse_config(
        {"context": {"engine": "plain"}, "memory": {"providers": []},
         "engines": {"plain": {"level": 3}}}
    )
    with pytest.raises(EngineLoadError, match=r"engines\.plain has options \(level\)"):
        load_plugins(cfg)
    # without options the same engine loads
    loaded = load_plugins(parse_config({"context": {"engine": "plain"},
                                        "memory": {"providers": []}}))
    assert list(loaded.engines) == ["plain"]


def test_unknown_engine_lists_installed_choices_r0_3(fake: FakeInstall) -> None:
    _install(fake)
    cfg = parse_config({"context": {"engine": "alpah"}, "memory": {"providers": []}})
    with pytest.raises(UnknownEngineError) as err:
        load_plugins(cfg)
    message = str(err.value)
    assert message.startswith("context.engine: unknown engine 'alpah' (did you mean 'alpha'?)")
    assert "installed engines: alpha, broken, loud, plain" in message
    assert err.value.choices == ["alpha", "broken", "loud", "plain"]


def test_unknown_engine_in_a_hook_chain_names_that_key(fake: FakeInstall) -> None:
    _install(fake)
    cfg = parse_config(
        {"context": {"engine": "alpha", "hooks": {"select_context": ["alpha", "router"]}},
         "memory": {"providers": []}}
    )
    with pytest.raises(UnknownEngineError) as err:
        load_plugins(cfg)
    assert err.value.key == "context.hooks.select_context"
    assert str(err.value).startswith("context.hooks.select_context: unknown engine 'router'")


def test_engine_hidden_by_allow_list_says_so(
    fake: FakeInstall, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(fake)
    monkeypatch.setenv("HERMES_HOST_LOAD_PLUGINS", "plain")
    cfg = parse_config({"context": {"engine": "alpha"}, "memory": {"providers": []}})
    with pytest.raises(UnknownEngineError) as err:
        load_plugins(cfg)
    message = str(err.value)
    hidden = "'alpha' (acme-good 2.0.1) is installed but hidden by HERMES_HOST_LOAD_PLUGINS"
    assert hidden in message
    assert "installed engines: plain" in message
    assert not fake.imported("acme_good")


def test_selected_engine_failing_to_import_names_distribution_version_error(
    fake: FakeInstall,
) -> None:
    _install(fake)
    cfg = parse_config({"context": {"engine": "broken"}, "memory": {"providers": []}})
    with pytest.raises(EngineLoadError) as err:
        load_plugins(cfg)
    assert str(err.value) == (
        "context.engine: engine 'broken' (acme-broken 0.0.7) failed to load: "
        "ImportError: acme_broken needs 'frobnicate', which is not installed"
    )
    assert err.value.info.status == "failed"


def test_selected_engine_failing_to_instantiate_is_an_engine_load_error(
    fake: FakeInstall,
) -> None:
    fake.add(FakeDist("acme-ctor", "1.0", {ENGINE_GROUP: {"ctor": "acme_ctor:E"}},
                      {"acme_ctor": "class E:\n    def __init__(self, options):\n"
                                    "        raise ValueError('options.mode must be fast')\n"}))
    fake.activate()
    with pytest.raises(EngineLoadError, match=r"ValueError: options.mode must be fast"):
        load_plugins(parse_config({"context": {"engine": "ctor"}, "memory": {"providers": []}}))


def test_failing_memory_provider_is_recorded_and_the_host_continues(fake: FakeInstall) -> None:
    _install(fake)
    cfg = parse_config(
        {"context": {"engine": "alpha"}, "memory": {"providers": ["brittle", "notes", "gone"]}}
    )
    loaded = load_plugins(cfg)
    assert list(loaded.engines) == ["alpha"] and list(loaded.providers) == ["notes"]
    failed = {i.name: i for i in loaded.failures}
    assert set(failed) == {"brittle", "gone"}
    assert (failed["brittle"].distribution, failed["brittle"].version) == ("acme-broken", "0.0.7")
    assert failed["brittle"].error == (
        "ImportError: acme_broken needs 'frobnicate', which is not installed"
    )
    assert "not installed; installed memory providers: brittle, notes" in str(
        failed["gone"].error
    )
    assert loaded.pm.get_plugin("brittle") is None


MISSPELLED = '''
from hermes_host import hookimpl

class Typo:
    @hookimpl
    def should_compres(self, request):
        return None

    @hookimpl
    def on_sesion_start(self, request):
        return None
'''


def test_misspelled_hook_in_an_engine_is_an_error_naming_plugin_and_hook(
    fake: FakeInstall,
) -> None:
    fake.add(FakeDist("acme-typo", "0.2", {ENGINE_GROUP: {"typo": "acme_typo:Typo"},
                                           PROVIDER_GROUP: {"typo_mem": "acme_typo:Typo"}},
                      {"acme_typo": MISSPELLED}))
    fake.activate()
    with pytest.raises(EngineLoadError) as err:
        load_plugins(parse_config({"context": {"engine": "typo"}, "memory": {"providers": []}}))
    message = str(err.value)
    assert "'typo' (acme-typo 0.2)" in message
    assert "'should_compres' (did you mean 'should_compress'?)" in message
    assert "'on_sesion_start' (did you mean 'on_session_start'?)" in message


def test_misspelled_hook_in_a_provider_skips_that_provider(fake: FakeInstall) -> None:
    fake.add(FakeDist("acme-typo", "0.2", {PROVIDER_GROUP: {"typo_mem": "acme_typo:Typo"}},
                      {"acme_typo": MISSPELLED}))
    fake.activate()
    extra = {"alpha": _Engine()}
    cfg = parse_config({"context": {"engine": "alpha"}, "memory": {"providers": ["typo_mem"]}})
    loaded = load_plugins(cfg, extra=extra)
    assert [i.name for i in loaded.failures] == ["typo_mem"]
    assert "did you mean 'on_session_start'" in str(loaded.failures[0].error)
    assert loaded.pm.get_plugin("typo_mem") is None
    loaded.pm.check_pending()  # what stays registered is clean


class _Engine:
    @hookimpl
    def should_compress(self, request: ShouldCompressRequest) -> None:
        return None


class _BadSignature:
    @hookimpl
    def compress(self, req: object) -> None:  # the hook's argument is called ``request``
        return None


def test_hook_with_a_wrong_argument_name_is_an_engine_load_error(fake: FakeInstall) -> None:
    fake.activate()
    cfg = parse_config({"context": {"engine": "bad"}, "memory": {"providers": []}})
    pattern = r"'bad'.*cannot be registered: .*'req'.*not be found in the hookspec"
    with pytest.raises(EngineLoadError, match=pattern):
        load_plugins(cfg, extra={"bad": _BadSignature()})


def test_extras_satisfy_the_selection_without_entry_points(fake: FakeInstall) -> None:
    fake.activate()
    engine, provider = _Engine(), _Recorder("p")
    cfg = parse_config({"context": {"engine": "mine"}, "memory": {"providers": ["p"]}})
    loaded = load_plugins(cfg, extra={"mine": engine, "p": provider})
    assert loaded.engines == {"mine": engine} and loaded.providers == {"p": provider}
    kinds = {i.name: (i.kind, i.status, i.hooks) for i in loaded.infos}
    assert kinds["mine"] == ("engine", "loaded", ["should_compress"])
    assert kinds["p"][0] == "memory_provider"


def test_a_name_cannot_be_both_engine_and_provider(fake: FakeInstall) -> None:
    fake.activate()
    cfg = parse_config({"context": {"engine": "x"}, "memory": {"providers": ["x"]}})
    with pytest.raises(PluginError, match="also selected as an engine"):
        load_plugins(cfg, extra={"x": _Engine()})


def test_composition_rule_hook_chains_in_configured_order_r14_8(fake: FakeInstall) -> None:
    """``context.hooks.<hook>`` is used as given; every other hook asks ``context.engine``."""
    fake.activate()
    cfg = parse_config(
        {"context": {"engine": "compressor",
                     "hooks": {"select_context": ["topic_router", "retrieval"]}},
         "memory": {"providers": []}}
    )
    assert cfg.context.chain("select_context") == ["topic_router", "retrieval"]
    for hook in ("should_compress", "compress", "prune_tool_results_only"):
        assert cfg.context.chain(hook) == ["compressor"]
    engines = {name: _Engine() for name in ("retrieval", "compressor", "topic_router")}
    loaded = load_plugins(cfg, extra=engines)
    assert list(loaded.engines) == ["retrieval", "compressor", "topic_router"]  # extras' order
    assert cfg.context.engine_names() == ["compressor", "topic_router", "retrieval"]
    for name in cfg.context.engine_names():
        assert loaded.pm.get_plugin(name) is engines[name]


def test_trace_switch_prints_what_was_loaded(
    fake: FakeInstall, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _install(fake)
    cfg = parse_config({"context": {"engine": "alpha"}, "memory": {"providers": ["brittle"]}})
    load_plugins(cfg)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("HERMES_HOST_TRACE_PLUGINS", "1")
    load_plugins(cfg)
    err = capsys.readouterr().err
    assert "loaded engine 'alpha' (acme-good 2.0.1) hooks=['should_compress', 'compress']" in err
    assert "memory provider 'brittle' (acme-broken 0.0.7) failed: ImportError" in err


# --- memory-provider hooks are broadcast to every provider (R-14.4) -----------------------


class _Recorder:
    """A memory provider implementing every memory hook, recording each call."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[tuple[str, str]] = []

    @hookimpl
    def on_pre_compress(self, request: object) -> str | None:
        self.calls.append(("on_pre_compress", request.session_id))  # type: ignore[attr-defined]
        return None if self.name == "quiet" else f"{self.name} keeps this"

    @hookimpl
    def on_system_prompt(self, request: SessionEvent) -> str | None:
        self.calls.append(("on_system_prompt", request.session_id))
        return f"[{self.name}] memory block"

    @hookimpl
    def on_session_start(self, request: SessionEvent) -> None:
        self.calls.append(("on_session_start", request.session_id))

    @hookimpl
    def on_session_switch(self, request: SessionEvent) -> None:
        self.calls.append(("on_session_switch", f"{request.previous_session_id}->"
                                                f"{request.session_id}"))

    @hookimpl
    def on_session_reset(self, request: SessionEvent) -> None:
        self.calls.append(("on_session_reset", str(request.reason)))

    @hookimpl
    def on_session_end(self, request: SessionEvent) -> None:
        self.calls.append(("on_session_end", request.session_id))

    @hookimpl
    def on_turn_complete(self, request: SessionEvent) -> None:
        self.calls.append(("on_turn_complete", str(len(request.messages))))


@pytest.fixture
def providers(fake: FakeInstall) -> tuple[object, _Recorder, _Recorder]:
    fake.activate()
    first, second = _Recorder("first"), _Recorder("quiet")
    cfg = parse_config({"context": {"engine": "e"}, "memory": {"providers": ["first", "quiet"]}})
    loaded = load_plugins(cfg, extra={"e": _Engine(), "first": first, "quiet": second})
    assert list(loaded.providers) == ["first", "quiet"]
    return loaded.pm, first, second


def test_on_pre_compress_collects_every_providers_text_r11_4(providers: tuple) -> None:
    from hermes_host import PreCompressRequest

    pm, first, quiet = providers
    texts = pm.hook.on_pre_compress(request=PreCompressRequest(session_id="s", messages=[]))
    assert texts == ["first keeps this"]  # None answers are dropped by the broadcast
    assert first.calls == quiet.calls == [("on_pre_compress", "s")]


def test_on_system_prompt_reaches_every_provider(providers: tuple) -> None:
    pm, _first, _quiet = providers
    blocks = pm.hook.on_system_prompt(request=SessionEvent(session_id="s"))
    assert sorted(blocks) == ["[first] memory block", "[quiet] memory block"]


def test_on_session_start_is_broadcast_to_every_provider(providers: tuple) -> None:
    pm, first, quiet = providers
    pm.hook.on_session_start(request=SessionEvent(session_id="s7"))
    assert first.calls == quiet.calls == [("on_session_start", "s7")]


def test_on_session_switch_is_broadcast_with_both_ids(providers: tuple) -> None:
    pm, first, quiet = providers
    pm.hook.on_session_switch(request=SessionEvent(session_id="child", previous_session_id="p"))
    assert first.calls == quiet.calls == [("on_session_switch", "p->child")]


def test_on_session_reset_is_broadcast_with_the_reason(providers: tuple) -> None:
    pm, first, quiet = providers
    pm.hook.on_session_reset(request=SessionEvent(session_id="s", reason="idle"))
    assert first.calls == quiet.calls == [("on_session_reset", "idle")]


def test_on_session_end_is_broadcast_to_every_provider(providers: tuple) -> None:
    pm, first, quiet = providers
    pm.hook.on_session_end(request=SessionEvent(session_id="s9"))
    assert first.calls == quiet.calls == [("on_session_end", "s9")]


def test_on_turn_complete_is_broadcast_with_the_turns_messages(providers: tuple) -> None:
    pm, first, quiet = providers
    turn = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    pm.hook.on_turn_complete(request=SessionEvent(session_id="s", messages=turn))
    assert first.calls == quiet.calls == [("on_turn_complete", "2")]

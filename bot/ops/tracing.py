"""OpenTelemetry traces, with the optional extra `sayso[otel]` and an OTLP endpoint set.

Nothing here imports OpenTelemetry until `setup()` finds the extra installed and
`OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set; until then every
function is a no-op costing one attribute check. The exporter is OTLP over HTTP and reads the
standard `OTEL_*` variables itself (headers, timeout, compression, service name via
`OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES`).

Spans (names say what a reader looks for):
- `slack.ack <type>`: the front answering Slack's request (`command`, `block_actions`, …);
- `model.request <model>`: each model request;
- `slack.<method>`: each Slack Web API call (`slack.chat.postMessage`);
- `sayso.decision <decision>`: a decision, as it is written, inside the click's span.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.config import Settings

_tracer: Any = None
"""The tracer once `setup()` enabled tracing; None: nothing is traced or imported."""


def enabled() -> bool:
    return _tracer is not None


def available() -> bool:
    import importlib.util

    return importlib.util.find_spec("opentelemetry.sdk") is not None


def setup(settings: Settings, *, exporter: Any = None) -> bool:
    """Trace this process when the extra is installed and an OTLP endpoint is configured (or
    an `exporter` is given: tests pass an in-memory one). Idempotent; True when tracing."""
    global _tracer
    if _tracer is not None:
        return True
    endpoint = settings.otel_exporter_otlp_endpoint or settings.otel_exporter_otlp_traces_endpoint
    if exporter is None and not endpoint:
        return False
    if not available():
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "sayso"}))
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _tracer = provider.get_tracer("sayso")
    _install_observers()
    return True


def reset() -> None:
    """Stop tracing (tests)."""
    global _tracer
    _tracer = None


# -- spans -------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def span(name: str, kind: str = "INTERNAL", **attributes: Any) -> AsyncIterator[Any]:
    """A span around a block (`async with tracing.span("tool deploy", run_id=...)`); a no-op
    without tracing."""
    if _tracer is None:
        yield None
        return
    from opentelemetry.trace import SpanKind, Status, StatusCode

    with _tracer.start_as_current_span(
        name, kind=getattr(SpanKind, kind), attributes=_clean(attributes)
    ) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def _run_ids(run_id: str) -> tuple[int, int]:
    """The trace id of a run (every drive of it, on any process, before and after each pause)
    and the id of its root span, both derived from the run id: nothing to store or carry."""
    digest = hashlib.sha256(f"sayso-run:{run_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


@contextlib.asynccontextmanager
async def run_span(run_id: str, name: str, **attributes: Any) -> AsyncIterator[Any]:
    """A drive of a run as a span of the run's one trace: a continuation after a pause, on
    whichever worker, joins the same trace, and links to where it was started from (the
    command's ack, a click's decision) when that is the current span."""
    if _tracer is None:
        yield None
        return
    from opentelemetry import trace
    from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, TraceFlags

    trace_id, root_id = _run_ids(run_id)
    root = SpanContext(trace_id, root_id, is_remote=True, trace_flags=TraceFlags(1))
    links = [Link(root)]
    here = trace.get_current_span().get_span_context()
    if here.is_valid and here.trace_id != trace_id:
        links.append(Link(here))  # where this drive came from
    parent = trace.set_span_in_context(NonRecordingSpan(root))
    with _tracer.start_as_current_span(
        name, context=parent, links=links, attributes=_clean({"run_id": run_id, **attributes})
    ) as current:
        yield current


def record(name: str, seconds: float, error: str | None = None, **attributes: Any) -> None:
    """A span that just ended (`seconds` long), under the current span."""
    if _tracer is None:
        return
    from opentelemetry.trace import Status, StatusCode

    end = time.time_ns()
    done = _tracer.start_span(
        name, start_time=end - int(seconds * 1e9), attributes=_clean(attributes)
    )
    if error:
        done.set_status(Status(StatusCode.ERROR, error))
    done.end(end_time=end)


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {f"sayso.{k}": v for k, v in attributes.items() if v is not None}


# -- where the spans come from: the front, the providers, the Slack client, the audit ----------


def _install_observers() -> None:
    from bot.agent.models import provider
    from store import audit

    if _on_model_request not in provider.REQUEST_OBSERVERS:
        provider.REQUEST_OBSERVERS.append(_on_model_request)
    if _on_audit not in audit.AUDIT_OBSERVERS:
        audit.AUDIT_OBSERVERS.append(_on_audit)


def _on_model_request(model: str, seconds: float, outcome: str, usage: Any) -> None:
    record(
        f"model.request {model}",
        seconds,
        None if outcome == "ok" else outcome,
        model=model,
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
    )


async def _on_audit(_conn: Any, event: Mapping[str, Any]) -> None:
    if event["action"] == "decide" and event["outcome"] == "won":
        wanted = str(event.get("detail") or "").split(" ")[0].removeprefix("wanted=")
        record(
            f"sayso.decision {wanted or 'decided'}",
            0.0,
            run_id=event.get("run_id"),
            request_id=event.get("request_id"),
            call_id=event.get("call_id"),
            tool=event.get("tool_name"),
            actor=event.get("actor"),
        )


def trace_slack_calls(client: Any) -> None:
    """A `slack.<method>` span around each Web API call of this client (idempotent)."""
    if _tracer is None or getattr(client, "_sayso_traced", False):
        return
    call: Callable[..., Awaitable[Any]] = client.api_call

    async def api_call(api_method: str, **kwargs: Any) -> Any:
        async with span(f"slack.{api_method}", kind="CLIENT", method=api_method):
            return await call(api_method, **kwargs)

    client.api_call = api_call
    client._sayso_traced = True

"""Asking an endpoint picker where a completion goes, as a gateway asks it, and reading its gauges.

Envoy asks the picker over its external-processing gRPC API (`envoy.service.ext_proc.v3.
ExternalProcessor/Process`, from PyPI's `xds-protos`): it sends a request's headers, then its body
with end of stream, and reads the `x-gateway-destination-endpoint` header the picker sets in its
reply, "ip:port" (pkg/epp/handlers/request.go and pkg/epp/metadata/consts.go at v1.5.0), or an
immediate response when the picker refuses the request (no endpoint; shed; a request that waited in
flow control's queue past its time, 503, pkg/epp/requestcontrol/admission.go).

Not here: running the picker (podproc.py `endpoint_picker`), the clusters the tests ask it in.
"""

from __future__ import annotations

import json
import urllib.request

import grpc
from envoy.config.core.v3 import base_pb2
from envoy.service.ext_proc.v3 import external_processor_pb2 as ext_proc
from envoy.service.ext_proc.v3 import external_processor_pb2_grpc as ext_proc_grpc

from infra.serving.picker import DESTINATION_HEADER, METRICS_PORT


class PickerRefusedError(RuntimeError):
    """The picker answered with an immediate response (no endpoint, shed, timed out in its queue)
    instead of a choice."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body  # the picker's error, as the client would read it


def completion_body(model: str, prompt: str) -> bytes:
    """The body of an OpenAI completion of `prompt` by `model`, as a client sends it."""
    return json.dumps({"model": model, "prompt": prompt, "max_tokens": 16}).encode()


def ask(channel: grpc.Channel, body: bytes, timeout: float = 10) -> str:
    """Where the picker on `channel` sends a POST /v1/completions of `body`: its "ip:port". Blocks
    while the picker holds the request (its flow control), for up to `timeout` seconds."""
    headers = {
        ":method": "POST",
        ":path": "/v1/completions",
        ":authority": "gateway",
        "content-type": "application/json",
    }
    header_map = base_pb2.HeaderMap(
        headers=[base_pb2.HeaderValue(key=k, raw_value=v.encode()) for k, v in headers.items()]
    )
    messages = [
        ext_proc.ProcessingRequest(request_headers=ext_proc.HttpHeaders(headers=header_map, end_of_stream=False)),
        ext_proc.ProcessingRequest(request_body=ext_proc.HttpBody(body=body, end_of_stream=True)),
    ]
    stub = ext_proc_grpc.ExternalProcessorStub(channel)
    for reply in stub.Process(iter(messages), timeout=timeout):
        if reply.HasField("immediate_response"):
            refused = reply.immediate_response
            raise PickerRefusedError(int(refused.status.code), refused.body.decode(errors="replace"))
        if reply.HasField("request_headers"):
            for option in reply.request_headers.response.header_mutation.set_headers:
                if option.header.key == DESTINATION_HEADER:
                    return str(option.header.raw_value.decode())
    raise AssertionError("the picker's reply named no destination")


def gauge(address: str, name: str) -> float:
    """The picker's own gauge `name` (summed over its series), from its metrics endpoint at
    `address` (its pod's IP)."""
    # Read by line, not with tests.metrics_text: the picker also exposes Go's runtime summaries,
    # which that strict reader refuses. A sample line is `name{labels} value` or `name value`.
    url = f"http://{address}:{METRICS_PORT}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        lines = response.read().decode().splitlines()
    values = [float(line.rsplit(" ", 1)[1]) for line in lines if line.partition("{")[0].split(" ")[0] == name]
    if not values:
        raise KeyError(f"the picker exposes no {name} yet")
    return sum(values)

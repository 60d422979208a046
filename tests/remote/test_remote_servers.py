"""One client, several servers (one per GPU in a real campaign), as separate devices in
one trace."""

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.views.timeline import build_timeline

pytest.importorskip("zmq", reason="pyzmq is not installed")


@lnb.kernel
def add_one(values):
    i = lnb.dispatch_id().x
    values.write(i, values.read(i) + 1.0)


def test_two_servers_are_two_devices_in_one_trace():
    devices = [lnb.create_device("remote", staging="submit") for _ in range(2)]
    try:
        assert devices[0].info["server_pid"] != devices[1].info["server_pid"]
        hosts = {}
        with lnb.trace() as trace:
            for number, device in enumerate(devices):
                state = device.create_buffer(64, np.float32, name=f"state{number}")
                other = device.create_buffer(64, np.float32, name=f"other{number}")
                host = hosts[number] = np.full(64, float(number), np.float32)
                device.default_stream.submit(
                    [
                        state.copy_from_async(host),
                        add_one.dispatch_async(64, state),
                        state.copy_to_async(host),
                        other.copy_from_async(host),  # stale: staged before the download
                    ]
                )
                device.default_stream.synchronize()
                np.testing.assert_array_equal(host, np.full(64, number + 1.0, np.float32))
                np.testing.assert_array_equal(other.numpy(), np.full(64, float(number)))
        streams = {command.stream for command in trace.commands}
        assert len(streams) == 2
        addresses = [device.info["address"].removeprefix("tcp://") for device in devices]
        labels = [f"remote:{address}" for address in addresses]
        assert sorted(trace.streams[stream].device for stream in streams) == sorted(labels)
        assert {trace.streams[stream].backend for stream in streams} == {"remote"}
        assert {info.name: info.device for info in trace.buffers.values()} == {
            f"{name}{number}": labels[number] for number in (0, 1) for name in ("state", "other")
        }
        lanes = build_timeline(trace).lanes[1:]  # after the host's
        assert sorted(lane["device"] for lane in lanes) == sorted(labels)
        stale = [h for h in trace.hazards if h.kind.value == "STALE_UPLOAD"]
        assert len(stale) == 2
        assert {trace.command(h.command_ids[-1]).stream for h in stale} == streams
        assert [h.host.name for h in stale] == ["host", "host"]
    finally:
        for device in devices:
            device.close()

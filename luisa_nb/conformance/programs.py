"""The fixed conformance programs: the seed, copy-only lists, slices, views, streams,
callbacks, fills, buffer copies, and uploads larger than a backend's staging memory;
and the typed ones, the seed's pattern on buffers of vectors, of structs and on an
image."""

from __future__ import annotations

from luisa_nb.conformance.program import (
    MAIN_STREAM,
    ArraySpec,
    Callback,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
    Signal,
    Submit,
    Synchronize,
    Upload,
    View,
    Wait,
    all_of,
    whole,
)

N = 64
SIDE_STREAM = "side"


def _arrays(*names: str, size: int = N) -> tuple[ArraySpec, ...]:
    return tuple(ArraySpec(name, size) for name in names)


def seed() -> Program:
    """LuisaCompute #143 with the kernel's buffers passed as arguments."""
    x = ArraySpec("x", 1024, 0.0, 1.0)
    y = ArraySpec("y", 1024, 0.0, 1000.0)
    z = ArraySpec("z", 1024)
    z_data = ArraySpec("z_data", 1024, 123.0)
    commands = (
        Upload(whole(z), all_of(z_data)),
        Dispatch("vecadd", (whole(z), whole(x), whole(y))),
        Download(whole(z), all_of(z_data)),
        Upload(whole(z), all_of(z_data)),
        Copy(whole(z), whole(x)),
    )
    return Program("seed", (x, y, z), (z_data,), (Submit(commands),))


def _copy_only(name: str, between: tuple = (), *, split: bool = True) -> Program:
    a, b = _arrays("a", "b")
    h1, h2 = _arrays("h1", "h2")
    first = (Upload(whole(a), all_of(h1)), Download(whole(a), all_of(h2)))
    last = (Upload(whole(b), all_of(h2)),)
    steps = (Submit(first), *between, Submit(last)) if split else (Submit(first + last),)
    return Program(name, (a, b), (h1, h2), steps)


def copy_only() -> Program:
    """``[upload a <- h1, download a -> h2, upload b <- h2]`` in one list."""
    return _copy_only("copy_only", split=False)


def copy_only_synchronized() -> Program:
    return _copy_only("copy_only_synchronized", (Synchronize(),))


def copy_only_stream_synchronized() -> Program:
    return _copy_only("copy_only_stream_synchronized", (Synchronize(MAIN_STREAM),))


def copy_only_separate_lists() -> Program:
    """Two lists and no synchronize: under ``submit`` a race the analysis must call right."""
    return _copy_only("copy_only_separate_lists")


def _slices(name: str, download: HostSlice, upload: HostSlice) -> Program:
    a, b = _arrays("a", "b", size=32)
    g, h = ArraySpec("g", 32), ArraySpec("h", 64)
    commands = (
        Upload(whole(a), all_of(g)),
        Download(whole(a), download),
        Upload(whole(b), upload),
    )
    return Program(name, (a, b), (g, h), (Submit(commands),))


def disjoint_slices() -> Program:
    return _slices("disjoint_slices", HostSlice("h", 0, 32), HostSlice("h", 32, 64))


def overlapping_slices() -> Program:
    return _slices("overlapping_slices", HostSlice("h", 0, 32), HostSlice("h", 16, 48))


def reshaped_views() -> Program:
    a, b, c = _arrays("a", "b", "c")
    g, h = _arrays("g", "h")
    commands = (
        Upload(whole(a), all_of(g)),
        Download(whole(a), all_of(h)),
        Upload(whole(b), all_of(h, (8, 8))),
        Dispatch("scale", (whole(b),)),
        Download(whole(b), HostSlice("h", 0, N, (4, 4, 4))),
        Upload(whole(c), HostSlice("h", 0, N, (2, 32))),
    )
    return Program("reshaped_views", (a, b, c), (g, h), (Submit(commands),))


def _two_streams(name: str, ordered: bool) -> Program:
    a, b = _arrays("a", "b")
    h1, h2 = _arrays("h1", "h2")
    steps = [Submit((Upload(whole(a), all_of(h1)), Dispatch("scale", (whole(a),))))]
    if ordered:
        steps += [Signal(MAIN_STREAM, "done"), Wait(SIDE_STREAM, "done")]
        side = (Copy(whole(a), whole(b)), Dispatch("scale", (whole(b),)))
    else:
        side = (Upload(whole(b), all_of(h2)), Dispatch("scale", (whole(b),)))
    steps += [
        Submit((*side, Download(whole(b), all_of(h2))), SIDE_STREAM),
        Submit((Download(whole(a), all_of(h1)),)),
        Synchronize(),
    ]
    return Program(name, (a, b), (h1, h2), tuple(steps), (MAIN_STREAM, SIDE_STREAM))


def two_streams_with_event() -> Program:
    """The side stream copies what the main stream wrote, after waiting for its event."""
    return _two_streams("two_streams_with_event", ordered=True)


def two_streams_without_event() -> Program:
    """Two streams, no event, disjoint buffers and host arrays: nothing to order."""
    return _two_streams("two_streams_without_event", ordered=False)


def two_streams_host_handoff() -> Program:
    """A download on one stream, an event, then an upload of the same host array on the
    other: the event orders the device, not the host's staging."""
    a, b = _arrays("a", "b")
    h1, h2 = _arrays("h1", "h2")
    steps = (
        Submit(
            (
                Upload(whole(a), all_of(h1)),
                Dispatch("scale", (whole(a),)),
                Download(whole(a), all_of(h2)),
            )
        ),
        Signal(MAIN_STREAM, "downloaded"),
        Wait(SIDE_STREAM, "downloaded"),
        Submit((Upload(whole(b), all_of(h2)),), SIDE_STREAM),
        Synchronize(),
    )
    return Program("two_streams_host_handoff", (a, b), (h1, h2), steps, (MAIN_STREAM, SIDE_STREAM))


def callbacks() -> Program:
    """Callbacks between lists on two streams: their order and the host bytes they see."""
    a, b = _arrays("a", "b")
    h1, h2, h3 = _arrays("h1", "h2", "h3")
    steps = (
        Submit((Upload(whole(a), all_of(h1)), Download(whole(a), all_of(h2)))),
        Callback(MAIN_STREAM, "after the first list"),
        Submit((Fill(View("a", 16, 48), 2.5), Download(View("a", 0, 32), HostSlice("h2", 16, 48)))),
        Callback(MAIN_STREAM, "after the fill"),
        Signal(MAIN_STREAM, "filled"),
        Wait(SIDE_STREAM, "filled"),
        Callback(SIDE_STREAM, "side, after the event"),
        Submit((Copy(whole(a), whole(b)), Download(whole(b), all_of(h3))), SIDE_STREAM),
        Callback(SIDE_STREAM, "side, after its download"),
        Synchronize(),
        Submit((Upload(whole(b), all_of(h3)), Dispatch("scale", (whole(b),)))),
        Submit((Download(whole(b), all_of(h1)),)),
        Callback(MAIN_STREAM, "last"),
    )
    return Program("callbacks", (a, b), (h1, h2, h3), steps, (MAIN_STREAM, SIDE_STREAM))


def fills() -> Program:
    a, b = _arrays("a", "b")
    (h,) = _arrays("h")
    commands = (
        Fill(whole(a), 7.25),
        Download(whole(a), all_of(h)),
        Fill(View("a", 16, 48), -3.5),
        Download(View("a", 0, 32), HostSlice("h", 32, 64)),
        Upload(whole(b), all_of(h)),
        Fill(View("b", 0, 8), 0.0),
    )
    return Program("fills", (a, b), (h,), (Submit(commands),))


def buffer_copies() -> Program:
    a, b, c = _arrays("a", "b", "c")
    h1, h2 = _arrays("h1", "h2")
    commands = (
        Upload(whole(a), all_of(h1)),
        Copy(whole(a), whole(b)),
        Copy(View("b", 0, 32), View("c", 32, 64)),
        Copy(View("a", 32, 64), View("c", 0, 32)),
        Copy(View("c", 0, 16), View("c", 48, 64)),
        Dispatch("vecadd", (View("a", 0, 32), View("b", 32, 64), View("c", 16, 48))),
        Download(whole(c), all_of(h2)),
        Upload(whole(b), all_of(h2)),
    )
    return Program("buffer_copies", (a, b, c), (h1, h2), (Submit(commands),))


FIXED_PROGRAMS = (
    seed,
    copy_only,
    copy_only_synchronized,
    copy_only_stream_synchronized,
    copy_only_separate_lists,
    disjoint_slices,
    overlapping_slices,
    reshaped_views,
    two_streams_with_event,
    two_streams_without_event,
    two_streams_host_handoff,
    callbacks,
    fills,
    buffer_copies,
)


def vectors() -> Program:
    """The seed's download-then-upload of one host array, on a buffer of ``float4``."""
    v = ArraySpec("v", N, layout="float4")
    h = ArraySpec("h", N, 1.0, 0.5)
    commands = (
        Upload(whole(v), all_of(h)),
        Dispatch("swizzle", (whole(v),)),
        Download(whole(v), all_of(h)),
        Upload(whole(v), all_of(h)),
        Dispatch("swizzle", (whole(v),)),
    )
    return Program("vectors", (v,), (h,), (Submit(commands),))


def structs() -> Program:
    """Structs updated by a kernel, copied in halves, read back and uploaded again."""
    p, q = ArraySpec("p", N, layout="struct"), ArraySpec("q", N, layout="struct")
    h1, h2 = ArraySpec("h1", N, 2.0, 0.25), ArraySpec("h2", N)
    commands = (
        Upload(whole(p), all_of(h1)),
        Dispatch("weigh", (whole(p),)),
        Copy(View("p", 0, N // 2), View("q", N // 2, N)),
        Download(whole(q), all_of(h2)),
        Upload(whole(p), all_of(h2)),
        Dispatch("weigh", (whole(p),)),
    )
    return Program("structs", (p, q), (h1, h2), (Submit(commands),))


def images() -> Program:
    """An image brightened, copied into a plain buffer, read back as rows of texels and
    half of it uploaded again."""
    image, flat = ArraySpec("image", N, layout="image"), ArraySpec("flat", N)
    h = ArraySpec("h", N, 0.5, 0.125)
    commands = (
        Upload(whole(image), all_of(h)),
        Dispatch("brighten", (whole(image),)),
        Copy(whole(image), whole(flat)),
        Download(whole(image), all_of(h, (2, N // 8, 4))),
        Upload(View("image", 0, N // 2), HostSlice("h", N // 2, N)),
        Dispatch("brighten", (whole(image),)),
    )
    return Program("images", (image, flat), (h,), (Submit(commands),))


TYPED_PROGRAMS = (vectors, structs, images)


def upload_past_capacity(capacity: int) -> Program:
    """The copy-only list with uploads a little larger than ``capacity`` bytes."""
    size = capacity // 4 + 1024
    a, b = ArraySpec("a", size, 0.25), ArraySpec("b", size, 0.75)
    h1, h2 = ArraySpec("h1", size, 1.0, 1.0), ArraySpec("h2", size, -1.0, -1.0)
    commands = (
        Upload(whole(a), all_of(h1)),
        Download(whole(a), all_of(h2)),
        Upload(whole(b), all_of(h2)),
    )
    return Program("upload_past_capacity", (a, b), (h1, h2), (Submit(commands),))


def uploads_past_capacity(capacity: int) -> Program:
    """Three uploads of a little over half of ``capacity`` each in one list, the last two
    from host memory an earlier download of the list writes."""
    part = capacity // 8 + 256
    a, b = ArraySpec("a", part, 0.25), ArraySpec("b", 2 * part, 0.75)
    h1, h2 = ArraySpec("h1", part, 0.5, 1.0), ArraySpec("h2", 2 * part, -0.5, -1.0)
    commands = (
        Upload(whole(a), all_of(h1)),
        Download(whole(a), HostSlice("h2", part // 2, part // 2 + part)),
        Upload(View("b", 0, part), HostSlice("h2", 0, part)),
        Upload(View("b", part, 2 * part), HostSlice("h2", part, 2 * part)),
    )
    return Program("uploads_past_capacity", (a, b), (h1, h2), (Submit(commands),))


CAPACITY_PROGRAMS = (upload_past_capacity, uploads_past_capacity)

/* The trace clock (recording/clock.py) in C: one definition, included by the recording
 * layer's and the runtime's C code; each including module calls clock_init() at import. */
#ifndef LUISA_NB_TRACE_CLOCK_H
#define LUISA_NB_TRACE_CLOCK_H

#include <Python.h>
#include <stdint.h>
#if PY_VERSION_HEX >= 0x030D0000
#elif defined(_WIN32)
#include <windows.h>
#elif defined(__APPLE__)
#include <mach/mach_time.h>
#else
#include <time.h>
#endif

/* The clock time.perf_counter_ns() reads, without making an int: Python's own from 3.13,
 * before that the system clock it reads, converted as it converts it (QueryPerformanceCounter
 * on Windows, mach_absolute_time on macOS, CLOCK_MONOTONIC elsewhere). */
#if PY_VERSION_HEX < 0x030D0000 && defined(_WIN32)
static LARGE_INTEGER clock_frequency;
#elif PY_VERSION_HEX < 0x030D0000 && defined(__APPLE__)
static mach_timebase_info_data_t clock_timebase;
#endif

#if PY_VERSION_HEX < 0x030D0000 && (defined(_WIN32) || defined(__APPLE__))
/* ticks * multiplier / divisor without overflow, rounded as Python rounds it */
static inline int64_t scale_ticks(int64_t ticks, int64_t multiplier, int64_t divisor)
{
    return ticks / divisor * multiplier + ticks % divisor * multiplier / divisor;
}
#endif

static int clock_init(void)
{
#if PY_VERSION_HEX < 0x030D0000 && defined(_WIN32)
    if (!QueryPerformanceFrequency(&clock_frequency) || clock_frequency.QuadPart <= 0) {
        PyErr_SetString(PyExc_OSError, "QueryPerformanceFrequency failed");
        return -1;
    }
#elif PY_VERSION_HEX < 0x030D0000 && defined(__APPLE__)
    if (mach_timebase_info(&clock_timebase) != KERN_SUCCESS || clock_timebase.denom == 0) {
        PyErr_SetString(PyExc_OSError, "mach_timebase_info failed");
        return -1;
    }
#endif
    return 0;
}

static inline int64_t clock_now(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t now;
    (void)PyTime_PerfCounterRaw(&now);
    return (int64_t)now;
#elif defined(_WIN32)
    LARGE_INTEGER now;
    QueryPerformanceCounter(&now);
    return scale_ticks((int64_t)now.QuadPart, 1000000000, (int64_t)clock_frequency.QuadPart);
#elif defined(__APPLE__)
    return scale_ticks((int64_t)mach_absolute_time(), clock_timebase.numer, clock_timebase.denom);
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
#endif
}

#endif

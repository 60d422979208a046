"""Buffer.from_list on lists of one type and of mixed types: the values each buffer
holds, or that the list was rejected."""

import luisa

luisa.init("cpu", support_gui=False)

LISTS = {
    "ints": [1, 2, 3],
    "floats": [1.0, 2.5, 3.75],
    "bools": [True, False, True],
    "an int, then floats": [1, 2.5, 3.7],
    "a float, then ints": [2.5, 1, 3],
    "a bool, then an int": [True, 2],
    "an int, then a bool": [1, True],
    "an int beyond 32 bits": [2**40, 1],
}

for name, values in LISTS.items():
    try:
        buffer = luisa.Buffer.from_list(values)
    except Exception:  # luisa-python asserts; luisa_nb raises a LuisaNbError
        print(f"{name}: rejected")
    else:
        print(f"{name}: {buffer.numpy().tolist()}")

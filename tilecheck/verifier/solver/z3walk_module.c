/* The C walk (z3walk.c) as the extension module tilecheck.verifier.solver._z3walk, so that it is
 * built when tilecheck is installed, as any C extension is (setup.py). The module itself holds
 * nothing: z3walk.py loads its file with ctypes and calls the tc_* functions z3walk.c exports. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static struct PyModuleDef z3walk_module = {
    PyModuleDef_HEAD_INIT, "_z3walk",
    "tilecheck's walks of Z3 terms in C, loaded by z3walk.py through ctypes.", -1, NULL,
};

PyMODINIT_FUNC PyInit__z3walk(void) { return PyModule_Create(&z3walk_module); }

// What a CustomOpBuilder(...).load() module is at the ELF level: a Python extension module
// (PyInit_ms_ext) whose C++ code calls into libmindspore_*. MindSpore is built with the old
// C++ ABI, so a module compiled with -D_GLIBCXX_USE_CXX11_ABI=1 needs std::__cxx11 names that
// libmindspore_core.so does not export. The Makefile builds ms_ext_abi0 (MindSpore's flags) and
// ms_ext_abi1 (the default of g++ and of torch/TensorFlow builds) from this one file.
#include <Python.h>

#include <string>

namespace mindspore {
// Exported by libmindspore_core.so (2.10) as _ZN9mindspore10InitializeERKSsS1_S1_S1_i.
void Initialize(const std::string &a, const std::string &b, const std::string &c,
                const std::string &d, int e);
}  // namespace mindspore

// Taking the address is enough to need the symbol (bound at load: not called through the PLT).
extern "C" {
void *ms_ext_entry = reinterpret_cast<void *>(&mindspore::Initialize);
}

static PyModuleDef ms_ext_module = {PyModuleDef_HEAD_INIT, "ms_ext", nullptr, -1, nullptr,
                                    nullptr, nullptr, nullptr, nullptr};

PyMODINIT_FUNC PyInit_ms_ext(void) { return PyModule_Create(&ms_ext_module); }

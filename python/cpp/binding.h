// `import ordo`: what the binding's two sources share.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ordo::python {

namespace py = pybind11;

// A mistake in a call's arguments (a pooling that does not exist, a count out of range). Raised in
// Python as ordo.InputError with the words the command line uses for the same option, without its
// "--": `pooling must be mean, first, max, mean-sqrt-len, weighted-mean, last or none, got "x"`.
struct ArgumentError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// `n` checked against lo .. hi: ArgumentError("NAME must be in LO .. HI, got N") otherwise.
int checked(const char* name, long long n, long long lo, long long hi);

// A numpy array over `v`'s own buffer: the vector moves into a capsule that the array keeps alive,
// so the values the engine wrote are not copied. Shape in C order.
template <class T>
py::array_t<T> as_array(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
  auto* owner = new std::vector<T>(std::move(v));
  py::capsule free_when_done(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(std::move(shape), owner->data(), free_when_done);
}

// Where Model(None) looks when ORDO_MODEL is not set: set by ordo/__init__.py from ordo/_location.py.
extern std::string default_model_dir_hint;

void bind_model(py::module_& m);

}  // namespace ordo::python

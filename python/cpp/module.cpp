// `import ordo`: the module's functions and its exception. The Model class is in model.cpp.
// A thin client of the library (lib/ordo/ordo.h), like the command line: arguments are
// converted, the GIL is released around the engine's work, and errors keep the CLI's words.
#include <Python.h>

#include <cmath>
#include <cstdint>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "python/cpp/binding.h"
#include "tools/teach/pe_report.h"

namespace ordo::python {

std::string default_model_dir_hint;

int checked(const char* name, long long n, long long lo, long long hi) {
  if (n < lo || n > hi)
    throw ArgumentError(std::string(name) + " must be in " + std::to_string(lo) + " .. " + std::to_string(hi) +
                        ", got " + std::to_string(n));
  return int(n);
}

namespace {

// ordo pe's table: PE(t, 2i) = sin(t / base^(2i/d)), PE(t, 2i+1) = cos(t / base^(2i/d)).
py::array_t<float> positional_encoding(long long positions, long long dim, const std::string& layout, double base) {
  const int N = checked("positions", positions, 1, kMaxCount), d = checked("dim", dim, 1, 65536);
  if (layout != "interleaved" && layout != "split")
    throw ArgumentError("layout must be interleaved or split, got \"" + layout + "\"");
  if (!(base > 0) || !std::isfinite(base)) throw ArgumentError("base must be a positive number");
  if (uint64_t(N) * uint64_t(d) > (uint64_t(1) << 28))
    throw ArgumentError("positions x dim is too large (max 2^28 values)");
  std::vector<float> table;
  {
    py::gil_scoped_release unlocked;
    table = teach::pe_table(layout == "split" ? teach::PeVariant::Split : teach::PeVariant::Paper, N, d, base);
  }
  return as_array(std::move(table), {N, d});
}

}  // namespace

}  // namespace ordo::python

PYBIND11_MODULE(_ordo, m) {
  namespace py = pybind11;
  using namespace ordo::python;
  m.doc() = "ordo: a small transformer encoder you can read, from Python.";
  m.attr("__version__") = ordo::version();  // the CMake project VERSION, as `ordo --version`

  // One exception for everything the user gave wrong: a file, a text, an argument. Its message is
  // what `ordo` prints after "error: ".
  // Kept for the life of the process (never destroyed: a destructor would run after Python has ended).
  static auto& input_error = *new py::exception<ordo::InputError>(m, "InputError", PyExc_ValueError);
  input_error.doc() =
      "Something wrong with what was given (a model file, a text, an argument). A ValueError; the message is "
      "the one the ordo command prints after \"error: \".";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ordo::InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    } catch (const ArgumentError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    }
  });

  m.def(
      "set_num_threads",
      [](const py::handle& n) {
        // An int (not a bool, a float or "2"): anything else in the library's words, not pybind11's TypeError.
        if (!py::isinstance<py::int_>(n) || py::isinstance<py::bool_>(n))
          throw ArgumentError("threads must be an integer, got " + std::string(py::repr(n)) + " (" +
                              std::string(py::str(py::type::handle_of(n).attr("__name__"))) + ")");
        long long v = 0;
        try {
          v = n.cast<long long>();
        } catch (const py::cast_error&) {
          v = -1;  // past long long: out of range either way
        }
        ordo::set_num_threads(checked("threads", v, 0, ordo::kMaxThreads));
      },
      py::arg("n"),
      "set_num_threads(n)\n\nThreads for the engine's matrix work, process-wide (0: one per core). Safe while "
      "other threads encode: it waits for the passes then running (the same as `ordo --threads`).");
  m.def("num_threads", &ordo::num_threads, "The engine's thread count (set_num_threads).");
  m.def("positional_encoding", &positional_encoding, py::arg("positions"), py::arg("dim"),
        py::arg("layout") = "interleaved", py::arg("base") = 10000.0,
        "positional_encoding(positions, dim, layout='interleaved', base=10000.0) -> ndarray (positions, dim)\n\n"
        "The sinusoidal positional encodings of \"Attention Is All You Need\" (section 3.5), the table `ordo pe` "
        "prints: PE(t, 2i) = sin(t / base^(2i/d)), PE(t, 2i+1) = cos(t / base^(2i/d)) for t = 0 .. positions-1.\n"
        "layout: 'interleaved' (sin, cos, sin, cos, ...) or 'split' (all the sines, then all the cosines).");
  m.def(
      "_set_default_model_dir", [](const std::string& dir) { default_model_dir_hint = dir; }, py::arg("dir"));
  m.def(
      "default_model_dir", [] { return ordo::default_model_dir(default_model_dir_hint); },
      "The model Model() loads: $ORDO_MODEL; else models/default beside the running python3 or "
      "../share/ordo/models/default from it (as `ordo` looks beside itself); else the model of the build tree "
      "or installation this module belongs to.");
  bind_model(m);
}

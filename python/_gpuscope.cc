// gpuscope._gpuscope: the Python binding over src/api (python/gpuscope wraps it; docs/python.md).
// Each call releases the GIL while it reads and analyses, and returns a Document that Python
// renders with the same views as the CLI (JSON, text, HTML). A failure raises gpuscope.Error
// (a ValueError) with the message the CLI prints after "gpuscope: error: ".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "api/analyze.h"
#include "api/diff.h"
#include "api/plan.h"
#include "base/sanitize.h"
#include "gpuscope/version.h"
#include "render/html.h"
#include "render/json.h"
#include "render/text.h"

namespace py = pybind11;
using namespace gpuscope;

namespace {

// Thrown on the C++ side, translated to gpuscope.Error (registered below).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Raise(const Status& s) { throw Error(SanitizeText(s.message())); }

std::vector<std::string> Messages(const std::vector<Status>& failures) {
  std::vector<std::string> out;
  for (const Status& f : failures) out.push_back(SanitizeText(f.message()));
  return out;
}

template <typename T>
void Set(const py::dict& options, const char* key, T* field) {
  if (options.contains(key) && !options[key].is_none()) *field = options[key].cast<T>();
}
template <typename T>
void Set(const py::dict& options, const char* key, std::optional<T>* field) {
  if (options.contains(key) && !options[key].is_none()) *field = options[key].cast<T>();
}

}  // namespace

PYBIND11_MODULE(_gpuscope, m) {
  m.doc() = "gpuscope's C++ library (use the gpuscope package, not this module)";
  m.attr("__version__") = GPUSCOPE_VERSION;
  py::register_exception<Error>(m, "Error", PyExc_ValueError);

  py::class_<render::Document>(m, "Document")
      .def_readonly("schema", &render::Document::schema)
      .def_readonly("title", &render::Document::title)
      .def_readonly("subtitle", &render::Document::subtitle)
      .def("json", [](const render::Document& d) { return render::ToJson(d); },
           "The JSON view (docs/json-schema.md), as `--json` prints it")
      .def(
          "text",
          [](const render::Document& d, bool verbose, size_t width, bool color) {
            render::TextOptions o;
            o.verbose = verbose;
            o.width = width;
            o.color = color;
            return render::RenderText(d, o);
          },
          py::arg("verbose") = false, py::arg("width") = 0, py::arg("color") = false,
          "The text view, as the CLI prints it to a pipe (width 0: no wrapping)")
      .def(
          "html",
          [](const render::Document& d, bool verbose) {
            return render::RenderHtml(d, {verbose});
          },
          py::arg("verbose") = false, "The self-contained HTML page, as `--html FILE` writes it");

  // analyze(input, options) -> (Document, [failure messages], monitor_input)
  m.def(
      "analyze",
      [](const std::string& input, const py::dict& options) {
        api::AnalyzeOptions o;
        Set(options, "threads", &o.threads);
        Set(options, "batch_mb", &o.batch_mb);
        Set(options, "inflater", &o.inflater);
        Set(options, "monitor", &o.monitor_file);
        Set(options, "ranks", &o.ranks);
        Set(options, "ranks_in_memory", &o.ranks_in_memory);
        std::optional<Result<api::Analysis>> r;
        {
          py::gil_scoped_release release;
          r.emplace(api::AnalyzeInput(input, o));
        }
        if (!r->ok()) Raise(r->status());
        api::Analysis& a = r->value();
        return py::make_tuple(std::move(a.document), Messages(a.failures), a.monitor_input);
      },
      py::arg("input"), py::arg("options") = py::dict());

  // plan(options) -> (Document, fits message or None)
  m.def(
      "plan",
      [](const py::dict& options) {
        api::PlanOptions o;
        Set(options, "model", &o.model);
        Set(options, "gpu", &o.gpu);
        Set(options, "gpu_spec", &o.gpu_spec);
        Set(options, "gpus", &o.gpus);
        Set(options, "global_batch", &o.global_batch);
        Set(options, "seq_len", &o.seq_len);
        Set(options, "precision", &o.precision);
        Set(options, "optimizer", &o.optimizer);
        Set(options, "zero", &o.zero);
        Set(options, "recompute", &o.recompute);
        Set(options, "offload", &o.offload);
        Set(options, "framework", &o.framework);
        Set(options, "fsdp", &o.fsdp);
        Set(options, "hybrid", &o.hybrid);
        Set(options, "grad_reduce_in_bf16", &o.bf16_grads);
        Set(options, "sp", &o.sp);
        Set(options, "no_flash", &o.no_flash);
        Set(options, "no_dropout", &o.no_dropout);
        Set(options, "tp", &o.tp);
        Set(options, "pp", &o.pp);
        Set(options, "vpp", &o.vpp);
        Set(options, "mbs", &o.mbs);
        Set(options, "efficiency", &o.efficiency);
        Set(options, "context_gib", &o.context_gib);
        Set(options, "headroom", &o.headroom);
        Set(options, "inter_node_gbps", &o.inter_node_gbps);
        Set(options, "top", &o.top);
        Set(options, "from_trace", &o.from_trace);
        Set(options, "exact_from", &o.exact_from);
        Set(options, "no_exact", &o.no_exact);
        Set(options, "impl", &o.impl);
        std::optional<Result<api::Planned>> r;
        {
          py::gil_scoped_release release;
          r.emplace(api::PlanJob(o));
        }
        if (!r->ok()) Raise(r->status());
        api::Planned& p = r->value();
        py::object fits = py::none();
        if (!p.fits.ok()) fits = py::str(SanitizeText(p.fits.message()));
        return py::make_tuple(std::move(p.document), fits);
      },
      py::arg("options") = py::dict());

  // diff(before, after, options) -> (Document, [failure messages])
  m.def(
      "diff",
      [](const std::string& before, const std::string& after, const py::dict& options) {
        api::DiffOptions o;
        Set(options, "threads", &o.threads);
        Set(options, "names", &o.names);
        Set(options, "hta", &o.hta);
        std::optional<Result<api::Diffed>> r;
        {
          py::gil_scoped_release release;
          r.emplace(api::DiffInputs(before, after, o));
        }
        if (!r->ok()) Raise(r->status());
        api::Diffed& d = r->value();
        return py::make_tuple(std::move(d.document), Messages(d.failures));
      },
      py::arg("before"), py::arg("after"), py::arg("options") = py::dict());
}

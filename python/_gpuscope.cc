// gpuscope._gpuscope: the Python binding over src/api (python/gpuscope wraps it; docs/python.md).
// Each call releases the GIL while it reads and analyses, and returns a Document that Python
// renders with the same views as the CLI (JSON, text, HTML). A failure raises gpuscope.Error
// (a ValueError) with the message the CLI prints after "gpuscope: error: ".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "api/analyze.h"
#include "api/diff.h"
#include "api/plan.h"
#include "base/sanitize.h"
#include "gpuscope/version.h"
#include "render/csv.h"
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

// "--NAME: …" for an integer too large (or small) for the option's C++ type: the table's range
// as api::CheckOptions words it when the option has one, else the type's bounds.
template <typename O>
std::string OutOfRange(const api::Option<O>& opt, const std::string& value) {
  const std::string flag = "--" + std::string(opt.name);
  if (opt.range)
    return flag + ": value not in range " + api::FormatNumber(opt.range->first) + " to " +
           api::FormatNumber(opt.range->second);
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::decay_t<decltype(std::declval<O>().*member)>;
        using N = std::conditional_t<std::is_same_v<T, std::optional<int64_t>>, int64_t, T>;
        if constexpr (std::is_integral_v<N> && !std::is_same_v<N, bool>)
          return flag + ": " + value + " is out of range (an integer from " +
                 std::to_string(std::numeric_limits<N>::min()) + " to " +
                 std::to_string(std::numeric_limits<N>::max()) + ")";
        else
          return flag + ": " + value + " is out of range (beyond a double)";
      },
      opt.member);
}

// Every key of `options` by the subcommand's options table (api/options.h): Python's keyword is the
// flag's name with '_' for '-'. An unknown key or a value of the wrong type is a TypeError naming
// it.
template <typename O>
void SetFromTable(const api::OptionTable<O>& table, const py::dict& options, O* out,
                  const char* call) {
  for (const auto& [key, value] : options) {
    const std::string name = py::str(key);
    const api::Option<O>* opt = nullptr;
    for (const api::Option<O>& o : table)
      if (api::PythonName(o.name) == name) opt = &o;
    if (opt == nullptr)
      throw py::type_error(std::string(call) + "() got an unexpected option: " + name);
    if (value.is_none()) continue;
    std::visit(
        [&](auto member) {
          auto& field = out->*member;
          using T = std::decay_t<decltype(field)>;
          try {
            if constexpr (std::is_same_v<T, std::optional<int64_t>>)
              field = value.template cast<int64_t>();
            else
              field = value.template cast<T>();
          } catch (const py::cast_error&) {
            // A Python int beyond the C++ type (gpus=10**30, threads=2**40) is of the right type
            // and out of range: gpuscope.Error in the CLI's words, not "must be an int, not int".
            if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, std::string>)
              if (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value))
                throw Error(OutOfRange(*opt, py::str(value)));
            throw py::type_error(std::string(call) + "(): " + name + " must be " +
                                 (std::is_same_v<T, bool>          ? "a bool"
                                  : std::is_same_v<T, std::string> ? "a str"
                                  : std::is_same_v<T, double>      ? "a number"
                                                                   : "an int") +
                                 ", not " +
                                 std::string(py::str(value.get_type().attr("__name__"))));
          }
        },
        opt->member);
  }
}

// The table for Python: [{name, help, allowed, default, excludes}], in the CLI's order.
template <typename O>
py::list Describe(const api::OptionTable<O>& table) {
  static const O defaults{};
  py::list out;
  for (const api::Option<O>& o : table) {
    py::dict row;
    row["name"] = api::PythonName(o.name);
    row["help"] = std::string(o.help);
    row["allowed"] = o.allowed;
    std::vector<std::string> excludes;
    for (std::string_view x : o.excludes) excludes.push_back(api::PythonName(x));
    row["excludes"] = excludes;
    const std::string d = api::ValueText(o, defaults);
    row["default"] = d.empty() ? py::object(py::none()) : py::object(py::str(d));
    out.append(row);
  }
  return out;
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
      .def(
          "json", [](const render::Document& d) { return render::ToJson(d); },
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
          [](const render::Document& d, bool verbose) { return render::RenderHtml(d, {verbose}); },
          py::arg("verbose") = false, "The self-contained HTML page, as `--html FILE` writes it")
      .def(
          "csv", [](const render::Document& d) { return render::CsvTables(d); },
          "Every table as [(table key, CSV text)], as `--csv DIR` writes them")
      .def(
          "write_csv",
          [](const render::Document& d, const std::string& dir) {
            auto written = render::WriteCsvTables(d, dir, "to_csv");
            if (!written.ok()) Raise(written.status());
            return *written;
          },
          py::arg("dir"), "Every table as DIR/<table>.csv through the CLI's output checks");

  // analyze(input, options) -> (Document, [failure messages], monitor_input)
  m.def(
      "analyze",
      [](const std::string& input, const py::dict& options) {
        api::AnalyzeOptions o;
        SetFromTable(api::AnalyzeOptionTable(), options, &o, "analyze");
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
        SetFromTable(api::PlanOptionTable(), options, &o, "plan");
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

  m.def(
      "plan_options", []() { return Describe(api::PlanOptionTable()); },
      "plan()'s options as [{name, help, allowed, default, excludes}] (the CLI's flags, from one "
      "table)");
  m.def(
      "analyze_options", []() { return Describe(api::AnalyzeOptionTable()); },
      "analyze()'s options, as plan_options");
  m.def(
      "diff_options", []() { return Describe(api::DiffOptionTable()); },
      "diff()'s options, as plan_options");

  // diff(before, after, options) -> (Document, [failure messages])
  m.def(
      "diff",
      [](const std::string& before, const std::string& after, const py::dict& options) {
        api::DiffOptions o;
        SetFromTable(api::DiffOptionTable(), options, &o, "diff");
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

#include "plan/exact.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include <simdjson.h>

#include "base/sanitize.h"

extern char** environ;

namespace gpuscope::plan {

double MeasuredStep::MeanSavedPerLayer() const {
  if (saved_per_layer_bytes.empty()) return 0;
  return std::accumulate(saved_per_layer_bytes.begin(), saved_per_layer_bytes.end(), 0.0) /
         static_cast<double>(saved_per_layer_bytes.size());
}

namespace {

Status Bad(std::string_view origin, const std::string& what) {
  return Status::Error(StatusCode::kInvalidInput,
                       std::string(origin) + ": exact mode: " + what +
                           " (hint: run python/gpuscope/exact.py by hand to see its output)");
}

// Bounds of a real measured step: a byte count past 1 PiB, FLOPs past 1e24 per op or a count past
// 1e12 calls is not a training step (and would not survive the document's exact integers).
constexpr double kMaxBytes = 1125899906842624.0;  // 2^50
constexpr double kMaxFlops = 1e24;
constexpr double kMaxCount = 1e12;

// A JSON number (double, int64 or uint64) as a double; false when it is none or not finite.
bool AsNumber(simdjson::dom::element e, double* out) {
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS) {
    *out = d;
    return std::isfinite(d);
  }
  int64_t i;
  if (e.get_int64().get(i) == simdjson::SUCCESS) {
    *out = static_cast<double>(i);
    return true;
  }
  uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) {
    *out = static_cast<double>(u);
    return true;
  }
  return false;
}

// Reads a number field; false when absent or not a number.
bool Number(simdjson::dom::object o, const char* key, double* out) {
  simdjson::dom::element e;
  return o[key].get(e) == simdjson::SUCCESS && AsNumber(e, out);
}
std::string Text(simdjson::dom::object o, const char* key) {
  std::string_view v;
  if (o[key].get_string().get(v) != simdjson::SUCCESS) return "";
  return SanitizeText(v);
}

}  // namespace

Result<MeasuredStep> ParseMeasuredStep(std::string_view json, std::string_view origin) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS)
    return Bad(origin, "its output is not JSON");
  simdjson::dom::object o;
  if (root.get_object().get(o) != simdjson::SUCCESS)
    return Bad(origin, "its output is not a JSON object");
  if (std::string error = Text(o, "error"); !error.empty())
    return Status::Error(StatusCode::kInvalidInput, std::string(origin) + ": " + error);
  if (Text(o, "schema") != "gpuscope.exact/1")
    return Bad(origin, "expected schema gpuscope.exact/1, got '" + Text(o, "schema") + "'");
  MeasuredStep m;
  m.torch_version = Text(o, "torch");
  m.transformers_version = Text(o, "transformers");
  m.model_type = Text(o, "model_type");
  m.precision = Text(o, "precision");
  m.recompute = Text(o, "recompute");
  m.optimizer = Text(o, "optimizer");
  double batch = 0, seq = 0, layers = 0, kernels = 0;
  if (!Number(o, "batch", &batch) || !Number(o, "seq_len", &seq) || !Number(o, "layers", &layers) ||
      !Number(o, "peak_allocated_bytes", &m.peak_allocated_bytes) ||
      !Number(o, "parameters", &m.parameters) ||
      !Number(o, "parameter_bytes", &m.parameter_bytes) ||
      !Number(o, "optimizer_state_bytes", &m.optimizer_state_bytes) ||
      !Number(o, "gradient_bytes", &m.gradient_bytes))
    return Bad(origin, "a field of the measured step is missing or not a number");
  if (batch < 1 || seq < 1 || layers < 0 || batch > 16777216 || seq > 16777216 || layers > 1e6)
    return Bad(origin, "batch, seq_len or layers out of range");
  for (double v :
       {m.peak_allocated_bytes, m.parameter_bytes, m.optimizer_state_bytes, m.gradient_bytes})
    if (!(v >= 0 && v <= kMaxBytes)) return Bad(origin, "a byte count outside [0, 2^50]");
  if (!(m.parameters >= 0 && m.parameters <= kMaxBytes))
    return Bad(origin, "parameters outside [0, 2^50]");
  m.batch = static_cast<int64_t>(batch);
  m.seq_len = static_cast<int64_t>(seq);
  m.layers = static_cast<int64_t>(layers);
  Number(o, "kernels", &kernels);
  m.kernels = static_cast<int64_t>(kernels);
  Number(o, "seconds", &m.seconds);
  if (!(m.seconds >= 0 && m.seconds < 1e9)) m.seconds = 0;
  if (!(kernels >= 0 && kernels <= kMaxCount)) return Bad(origin, "kernels out of range");
  simdjson::dom::object at;
  if (o["at_peak"].get_object().get(at) != simdjson::SUCCESS ||
      !Number(at, "parameters", &m.peak_parameters) ||
      !Number(at, "optimizer_states", &m.peak_optimizer_states) ||
      !Number(at, "gradients", &m.peak_gradients) ||
      !Number(at, "activations_and_temporaries", &m.peak_rest))
    return Bad(origin, "at_peak is missing or incomplete");
  Number(at, "autocast_weight_cache", &m.peak_autocast_cache);
  for (double v : {m.peak_parameters, m.peak_optimizer_states, m.peak_gradients, m.peak_rest,
                   m.peak_autocast_cache})
    if (!(v >= 0 && v <= kMaxBytes))
      return Bad(origin, "at_peak holds a byte count outside [0, 2^50]");
  simdjson::dom::array layers_saved;
  if (o["saved_per_layer_bytes"].get_array().get(layers_saved) == simdjson::SUCCESS)
    for (simdjson::dom::element e : layers_saved) {
      double d;
      if (!AsNumber(e, &d)) return Bad(origin, "saved_per_layer_bytes holds a non-number");
      if (!(d >= 0 && d <= kMaxBytes))
        return Bad(origin, "saved_per_layer_bytes outside [0, 2^50]");
      m.saved_per_layer_bytes.push_back(d);
    }
  simdjson::dom::array ops;
  if (o["ops"].get_array().get(ops) != simdjson::SUCCESS) return Bad(origin, "ops is missing");
  for (simdjson::dom::element e : ops) {
    simdjson::dom::object x;
    if (e.get_object().get(x) != simdjson::SUCCESS) return Bad(origin, "an op is not an object");
    MeasuredOp op;
    op.op = Text(x, "op");
    op.klass = Text(x, "class");
    op.path = Text(x, "path");
    double mm = 0, nn = 0, kk = 0, count = 0;
    if (!Number(x, "flops", &op.flops) || !Number(x, "bytes", &op.bytes) ||
        !Number(x, "count", &count))
      return Bad(origin, "op '" + op.op + "' lacks flops, bytes or count");
    if (!(op.flops >= 0 && op.flops <= kMaxFlops) || !(op.bytes >= 0 && op.bytes <= kMaxBytes) ||
        !(count >= 0 && count <= kMaxCount))
      return Bad(origin, "op '" + op.op + "': flops, bytes or count out of range");
    Number(x, "m", &mm);
    Number(x, "n", &nn);
    Number(x, "k", &kk);
    op.m = static_cast<int64_t>(std::clamp(mm, 0.0, 1e15));
    op.n = static_cast<int64_t>(std::clamp(nn, 0.0, 1e15));
    op.k = static_cast<int64_t>(std::clamp(kk, 0.0, 1e15));
    op.count = static_cast<int64_t>(count);
    m.ops.push_back(std::move(op));
  }
  return m;
}

namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  return out;
}

// The last `lines` lines of a text (a child's stderr, for an error message).
std::string Tail(const std::string& text, int lines) {
  size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n')) --pos;
  const size_t end = pos;
  for (int i = 0; i < lines && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
  }
  return SanitizeText(std::string_view(text).substr(pos, end - pos));
}

}  // namespace

namespace {

std::string Interpreter(const std::string& python) {
  if (!python.empty()) return python;
  const char* env = std::getenv("GPUSCOPE_PYTHON");
  return env && *env ? env : "python3";
}

// Runs argv with stdout and stderr to /dev/null; its exit status, -1 when it cannot run.
int RunQuietly(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

bool ExactModeAvailable(std::string* which) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("GPUSCOPE_PYTHON"); env && *env) {
    candidates.push_back(env);
  } else {
    if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv)
      candidates.push_back(std::string(venv) + "/bin/python");
    candidates.push_back("python3");
#ifdef GPUSCOPE_PROJECT_VENV_PYTHON
    if (access(GPUSCOPE_PROJECT_VENV_PYTHON, X_OK) == 0)
      candidates.push_back(GPUSCOPE_PROJECT_VENV_PYTHON);
#endif
  }
  std::string tried;
  for (const std::string& python : candidates) {
    if (RunQuietly(
            {python, "-c",
             "import importlib.util as u, sys; "
             "sys.exit(0 if u.find_spec('torch') and u.find_spec('transformers') else 3)"}) == 0) {
      *which = python;
      return true;
    }
    tried += (tried.empty() ? "" : ", ") + python;
  }
  *which = tried;
  return false;
}

Result<MeasuredStep> MeasureStep(const ExactRequest& r) {
  const std::string python = Interpreter(r.python);
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string dir = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp");
  std::string script = dir + "/gpuscope-exact-XXXXXX";
  std::string err_path = dir + "/gpuscope-exact-err-XXXXXX";
  std::vector<char> sp(script.begin(), script.end()), ep(err_path.begin(), err_path.end());
  sp.push_back('\0');
  ep.push_back('\0');
  const int sfd = mkstemp(sp.data());
  if (sfd < 0)
    return Status::Error(StatusCode::kIoError, "exact mode: cannot create a temporary file: " +
                                                   std::string(std::strerror(errno)));
  script = sp.data();
  const std::string_view text = ExactScript();
  bool wrote = write(sfd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(sfd);
  const int efd = mkstemp(ep.data());
  err_path = ep.data();
  auto cleanup = [&] {
    unlink(script.c_str());
    if (efd >= 0) unlink(err_path.c_str());
  };
  if (!wrote || efd < 0) {
    if (efd >= 0) close(efd);
    cleanup();
    return Status::Error(StatusCode::kIoError, "exact mode: cannot write the script to " + dir +
                                                   " (hint: set TMPDIR to a writable folder)");
  }
  int out_pipe[2];
  if (pipe(out_pipe) != 0) {
    close(efd);
    cleanup();
    return Status::Error(StatusCode::kIoError, "exact mode: pipe failed");
  }
  std::vector<std::string> args = {python,        script,
                                   "--config",    r.config_path,
                                   "--batch",     std::to_string(r.batch),
                                   "--seq-len",   std::to_string(r.seq_len),
                                   "--precision", r.precision,
                                   "--recompute", r.recompute,
                                   "--optimizer", r.optimizer};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, efd, 2);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, python.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(efd);
    cleanup();
    return Status::Error(
        StatusCode::kInvalidInput,
        "exact mode: cannot run " + python + ": " + std::strerror(rc) +
            " (hint: set GPUSCOPE_PYTHON to a Python with torch >= 2 and transformers)");
  }
  const std::string out = ReadAll(out_pipe[0]);
  close(out_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  lseek(efd, 0, SEEK_SET);
  const std::string err = ReadAll(efd);
  close(efd);
  cleanup();
  const std::string origin = "exact mode (" + python + ")";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (out.find("\"error\"") != std::string::npos) {
      Result<MeasuredStep> parsed = ParseMeasuredStep(out, origin);
      if (!parsed.ok())
        return Status::Error(parsed.status().code(),
                             parsed.status().message() +
                                 (WIFEXITED(status) && WEXITSTATUS(status) == 3
                                      ? " (hint: set GPUSCOPE_PYTHON to a Python that has them)"
                                      : ""));
    }
    return Status::Error(StatusCode::kInvalidInput,
                         origin + " failed (" +
                             (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                : "signal " + std::to_string(WTERMSIG(status))) +
                             "): " + Tail(err, 3));
  }
  return ParseMeasuredStep(out, origin);
}

PricedStep PriceMeasuredOps(const MeasuredStep& m, const hw::GpuPeaks& peaks, const OpEfficiency& e,
                            double token_scale, double param_scale) {
  PricedStep p;
  const double hbm = peaks.hbm_gbps.Roof() * 1e9;
  const double bf16_roof = peaks.Of(hw::MathPath::kBf16).Roof();
  auto path_roof = [&](std::string_view path) {
    for (size_t i = 0; i < hw::kMathPathCount; ++i) {
      const auto mp = static_cast<hw::MathPath>(i);
      if (hw::MathPathName(mp) == path) return peaks.Of(mp).Roof() * 1e12;
    }
    return bf16_roof * 1e12;
  };
  for (const MeasuredOp& op : m.ops) {
    const bool optimizer = op.klass == "foreach";
    const double scale = optimizer ? param_scale : token_scale;
    const double flops = op.flops * scale, bytes = op.bytes * scale;
    double t = 0;
    if (op.klass == "gemm" && flops > 0) {
      // The size curve is bf16's (the only one measured); its shape is taken for every path.
      double roof = path_roof(op.path);
      if (bf16_roof > 0) roof *= peaks.Bf16GemmAchievable(flops) / bf16_roof;
      const bool half = op.path == "bf16" || op.path == "fp16" || op.path == "fp8";
      if (half && ((op.m % 8) != 0 || (op.n % 8) != 0 || (op.k % 8) != 0))
        roof *= e.misaligned_gemm;
      t = std::max(flops / roof, bytes / hbm);
      p.gemm_s += std::max(t, e.min_kernel_s) * static_cast<double>(op.count);
      p.flops += flops * static_cast<double>(op.count);
    } else if ((op.klass == "attention" || op.klass == "attention_backward") && flops > 0) {
      const double share = op.klass == "attention" ? e.attention_forward : e.attention_backward;
      t = std::max(flops / (path_roof(op.path) * share), bytes / hbm);
      p.attention_s += std::max(t, e.min_kernel_s) * static_cast<double>(op.count);
      p.flops += flops * static_cast<double>(op.count);
    } else {
      const double share = op.klass == "normalization" ? e.normalization
                           : op.klass == "reduction"   ? e.reduction
                           : optimizer                 ? e.foreach
                                                       : e.elementwise;
      t = bytes / (hbm * share);
      const double s = std::max(t, e.min_kernel_s) * static_cast<double>(op.count);
      p.memory_s += s;
      if (optimizer) p.optimizer_s += s;
    }
    p.gpu_s += std::max(t, e.min_kernel_s) * static_cast<double>(op.count);
    p.kernels += op.count;
  }
  p.host_s = static_cast<double>(p.kernels) * e.host_per_op_s;
  return p;
}

}  // namespace gpuscope::plan

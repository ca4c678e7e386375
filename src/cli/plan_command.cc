#include "cli/plan_command.h"

#include "cli/options.h"
#include "cli/output.h"
#include "cli/usage.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "api/plan.h"
#include "base/output_file.h"
#include "base/sanitize.h"
#include "hw/gpu_table.h"
#include "plan/planner.h"
#include "plan/render.h"

namespace gpuscope::cli {

namespace {

int Fail(const Status& s) {
  PrintError(s);
  return ExitCodeFor(s);
}

// The best configuration's snippets as files in `dir` (created); what a framework cannot express
// is not written; the .sh scripts are executable. Names go to stderr, so stdout stays the document.
Status WriteConfigs(const plan::PlanRequest& r, const plan::ParallelConfig& c,
                    const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::Error(StatusCode::kIoError, "--write-configs " + dir + ": " + ec.message());
  for (const plan::ConfigSnippet& sn : plan::Snippets(r, c)) {
    if (sn.text.empty()) continue;
    const std::filesystem::path path = std::filesystem::path(dir) / sn.file;
    std::string note;
    GPUSCOPE_RETURN_IF_ERROR(WriteOutputFile(path.string(), sn.text, "--write-configs", &note));
    if (path.extension() == ".sh") {  // a script with its #! line: runnable as ./name.sh
      namespace fs = std::filesystem;
      fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add, ec);
      if (ec)
        return Status::Error(StatusCode::kIoError, path.string() + ": chmod +x: " + ec.message());
    }
    std::fprintf(stderr, "wrote %s%s\n", SanitizeText(path.string()).c_str(), note.c_str());
  }
  return Status::Ok();
}

}  // namespace

CLI::App* AddPlanCommand(CLI::App& app, PlanCliOptions* o) {
  auto* plan = AddCommand(app, "plan");
  AddOptions(plan, api::PlanOptionTable(), &o->plan);
  plan->add_option("--write-configs", o->write_configs,
                   "Write the best configuration's snippets as files into this folder "
                   "(megatron_args.sh, ds_config.json, accelerate.yaml, torchrun_trainer.sh)");
  AddOutputFlags(plan, &o->out);
  plan->add_flag("--list-models", o->list_models, "List the bundled model configs");
  plan->add_flag("--list-gpus", o->list_gpus, "List the known GPUs with their sources");
  return plan;
}

int RunPlanCommand(const PlanCliOptions& o) {
  if (o.list_models) {
    for (const std::string& n : plan::BundledModelNames()) {
      auto m = plan::LoadModelConfig(n);
      if (!m.ok()) return Fail(m.status());
      const plan::ParamCounts pc = plan::CountParameters(*m, m->vocab);
      std::printf("%-16s %8.3f B params  L=%lld h=%lld\n", n.c_str(), pc.total / 1e9,
                  static_cast<long long>(m->layers), static_cast<long long>(m->hidden));
    }
    return kExitOk;
  }
  if (o.list_gpus) {
    for (const hw::GpuSpec& g : hw::KnownGpus())
      std::printf("%-14s %-50s %s\n", g.name.c_str(), g.description.c_str(), g.source.c_str());
    return kExitOk;
  }
  auto planned = api::PlanJob(o.plan);
  if (!planned.ok()) return Fail(planned.status());
  const bool configs = !o.write_configs.empty() && !planned->report.feasible.empty();
  // Every output checked before any is written: a bad --write-configs must not leave the page
  // of --html behind it, nor the report printed as if all went well.
  if (Status s = CheckOutputArgs(o.out); !s.ok()) return Fail(s);
  if (configs) {
    std::vector<std::string> files;
    for (const plan::ConfigSnippet& sn :
         plan::Snippets(planned->request, planned->report.feasible.front().config))
      if (!sn.text.empty()) files.push_back(sn.file);
    if (Status s = CheckOutputFolder(o.write_configs, "--write-configs", files); !s.ok())
      return Fail(s);
  }
  if (const int rc = Emit(planned->document, o.out); rc != 0) return rc;
  if (configs) {
    if (Status s = WriteConfigs(planned->request, planned->report.feasible.front().config,
                                o.write_configs);
        !s.ok())
      return Fail(s);
  }
  if (!planned->fits.ok()) return Fail(planned->fits);
  return kExitOk;
}

}  // namespace gpuscope::cli

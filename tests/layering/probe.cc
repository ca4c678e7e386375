// Compiled as if it were a file of src/io (its targets link gpuscope_io and nothing else) by the
// test Layering.UpwardIncludeFailsToBuild. layering_probe_legal includes io's own folder and base/
// below it and must build; layering_probe_upward adds one include of analyze/, a stage above io,
// and must not.
#include "base/numbers.h"
#include "gpuscope/status.h"
#include "io/byte_source.h"
#ifdef GPUSCOPE_PROBE_UPWARD
#include "analyze/steps.h"
#endif

namespace gpuscope::layering_probe {
// Uses what it includes, so the control proves the headers really compile here.
int Probe() { return gpuscope::Status::Ok().ok() ? 0 : 1; }
}  // namespace gpuscope::layering_probe

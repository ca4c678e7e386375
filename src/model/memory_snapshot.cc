#include "model/memory_snapshot.h"

#include "base/enum_names.h"

namespace gpuscope::snapshot {

constexpr EnumNames<Action, 10> kActionNames(
    {Action::kAlloc, "alloc"}, {Action::kFreeRequested, "free_requested"},
    {Action::kFreeCompleted, "free_completed"}, {Action::kSegmentAlloc, "segment_alloc"},
    {Action::kSegmentFree, "segment_free"}, {Action::kSegmentMap, "segment_map"},
    {Action::kSegmentUnmap, "segment_unmap"}, {Action::kOom, "oom"},
    {Action::kSnapshot, "snapshot"}, {Action::kOther, "other"});

const char* ActionName(Action a) { return CNameOf(kActionNames, a); }

Action ActionFromName(std::string_view name) {
  return FromName(kActionNames, name).value_or(Action::kOther);
}

}  // namespace gpuscope::snapshot

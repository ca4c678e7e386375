#include "tune/oom.h"

#include <cctype>
#include <charconv>

namespace gpuscope::tune {

namespace {

// The messages as the frameworks print them:
//  * PyTorch (CUDA): "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
//    (GPU 0; 79.15 GiB total capacity; …)" (before 1.13: "RuntimeError: CUDA out of memory.");
//    2.x says "CUDA out of memory" too, and torch.OutOfMemoryError in 2.5+.
//  * PyTorch (ROCm): "HIP out of memory. Tried to allocate …".
//  * JAX / XLA: "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while
//    trying to allocate 4294967296 bytes." (TensorFlow: "ResourceExhaustedError: OOM when
//    allocating tensor").
//  * NCCL: "NCCL WARN Cuda failure 'out of memory'", "Failed to CUDA calloc"; through PyTorch
//    "ncclUnhandledCudaError: … Cuda failure 'out of memory'".
//  * The CUDA runtime and cuBLAS when a library allocates: cudaErrorMemoryAllocation,
//    CUBLAS_STATUS_ALLOC_FAILED.
constexpr OomPattern kPatterns[] = {
    {"CUDA out of memory", "PyTorch (CUDA)"}, {"HIP out of memory", "PyTorch (ROCm)"},
    {"OutOfMemoryError", "PyTorch"},          {"RESOURCE_EXHAUSTED: Out of memory", "JAX/XLA"},
    {"ResourceExhaustedError", "TensorFlow"}, {"Cuda failure 'out of memory'", "NCCL"},
    {"Failed to CUDA calloc", "NCCL"},        {"cudaErrorMemoryAllocation", "CUDA runtime"},
    {"CUBLAS_STATUS_ALLOC_FAILED", "cuBLAS"},
};

}  // namespace

std::span<const OomPattern> OomPatterns() { return kPatterns; }

const OomPattern* MatchOom(std::string_view line) {
  for (const OomPattern& p : kPatterns)
    if (line.find(p.text) != std::string_view::npos) return &p;
  return nullptr;
}

std::optional<double> PerProcessCapGib(std::string_view message) {
  constexpr std::string_view kAllowed = " GiB allowed";
  const size_t at = message.find(kAllowed);
  if (at == std::string_view::npos) return std::nullopt;
  size_t start = at;
  while (start > 0 && (std::isdigit(static_cast<unsigned char>(message[start - 1])) ||
                       message[start - 1] == '.'))
    --start;
  if (start == at) return std::nullopt;
  double gib = 0;
  const std::string_view number = message.substr(start, at - start);
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), gib);
  if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  return gib;
}

}  // namespace gpuscope::tune

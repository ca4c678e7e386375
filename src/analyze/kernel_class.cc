#include "analyze/kernel_class.h"

#include "base/enum_names.h"

namespace gpuscope::analyze {

namespace {

using P = MathPrecision;

// ---------------------------------------------------------------------------------------------
// String helpers. Names are matched once per unique name, so plain scans are fast enough; ASCII
// case folding is all we need (kernel names are ASCII identifiers).

constexpr char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
constexpr bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
constexpr bool IsLowerAlpha(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }
constexpr bool IsIdentChar(char c) {
  return IsLowerAlpha(c) || IsUpper(c) || IsDigit(c) || c == '_';
}

bool EqualNoCaseAt(std::string_view hay, size_t pos, std::string_view needle) {
  if (pos + needle.size() > hay.size()) return false;
  for (size_t i = 0; i < needle.size(); ++i) {
    if (Lower(hay[pos + i]) != Lower(needle[i])) return false;
  }
  return true;
}

// Position of the first occurrence of `needle` (case-insensitive) at or after `from`, or npos.
size_t FindNoCase(std::string_view hay, std::string_view needle, size_t from = 0) {
  if (needle.empty()) return from <= hay.size() ? from : std::string_view::npos;
  for (size_t i = from; i + needle.size() <= hay.size(); ++i) {
    if (EqualNoCaseAt(hay, i, needle)) return i;
  }
  return std::string_view::npos;
}

// s.substr(pos) without the exception: empty when pos is past the end (or npos).
std::string_view Tail(std::string_view s, size_t pos) {
  return pos >= s.size() ? std::string_view() : s.substr(pos);
}

bool ContainsNoCase(std::string_view hay, std::string_view needle) {
  return FindNoCase(hay, needle) != std::string_view::npos;
}

bool Contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

// Calls f(alternative) for each '|'-separated alternative; stops and returns true when f does.
template <typename F>
bool AnyAlternative(std::string_view alternatives, F&& f) {
  size_t start = 0;
  while (start <= alternatives.size()) {
    size_t bar = alternatives.find('|', start);
    if (bar == std::string_view::npos) bar = alternatives.size();
    std::string_view alt = alternatives.substr(start, bar - start);
    if (!alt.empty() && f(alt)) return true;
    start = bar + 1;
  }
  return false;
}

bool MatchesAlternatives(std::string_view name, std::string_view alternatives, NameMatch how) {
  return AnyAlternative(alternatives, [&](std::string_view alt) {
    switch (how) {
      case NameMatch::kContains:
        return Contains(name, alt);
      case NameMatch::kContainsNoCase:
        return ContainsNoCase(name, alt);
      case NameMatch::kPrefix:
        return name.substr(0, alt.size()) == alt;
    }
    return false;
  });
}

// A communication word must start a word: not preceded by a lowercase letter, unless it starts
// a camelCase word ("oneShotAllReduceKernel"). This keeps "small_gather" from matching
// "all_gather" while "twoShotAllReduce" still matches "allreduce".
bool ContainsWordStartNoCase(std::string_view hay, std::string_view needle) {
  for (size_t pos = FindNoCase(hay, needle); pos != std::string_view::npos;
       pos = FindNoCase(hay, needle, pos + 1)) {
    if (pos == 0 || !IsLowerAlpha(hay[pos - 1]) || IsUpper(hay[pos])) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Tables. docs/kernel-classes.md lists the same rows; keep the two in step.

constexpr KernelNamePattern kCommunicationPatterns[] = {
    {"nccl",
     "NCCL device kernels: ncclKernel_* (older NCCL), ncclDevKernel_* (newer NCCL); RCCL (ROCm) "
     "uses the same names"},
    {"rccl", "RCCL-specific kernels (ROCm)"},
    {"hccl", "Huawei HCCL"},
    {"msccl", "MSCCL (mscclKernel_*) and MSCCL++ (mscclpp::*) collectives"},
    {"nvshmem", "NVSHMEM device kernels and NVSHMEM-based collectives (nvshmemi_*)"},
    {"deep_ep::intranode", "DeepEP NVLink dispatch / combine / notify kernels"},
    {"deep_ep::internode",
     "DeepEP RDMA (internode) and low-latency (internode_ll) dispatch / combine kernels"},
    {"cross_device_reduce",
     "vLLM / sglang custom all-reduce (vllm::cross_device_reduce_1stage / _2stage)"},
    {"allreduce",
     "custom all-reduce kernels: TensorRT-LLM and c10d IntraNodeComm oneShotAllReduceKernel / "
     "twoShotAllReduceKernel, sglang quick all-reduce (allreduce_prototype_*), FlashInfer "
     "trtllm_allreduce_fusion"},
    {"all_reduce",
     "torch symmetric memory one_shot_all_reduce_kernel, two_shot_all_reduce_kernel, "
     "multimem_all_reduce_kernel"},
    {"allgather", "custom all-gather kernels"},
    {"all_gather", "torch symmetric memory multimem_all_gather_kernel and other all-gathers"},
    {"reducescatter", "custom reduce-scatter kernels"},
    {"reduce_scatter", "custom reduce-scatter kernels"},
    {"alltoall", "all-to-all kernels"},
    {"all_to_all", "all-to-all kernels (torch symmetric memory all_to_all_vdev, ...)"},
    {"all2all", "all-to-all kernels"},
    {"multimem_",
     "torch symmetric memory multicast (NVLS) kernels, e.g. multimem_one_shot_reduce_kernel"},
    {"userbuffers", "Transformer Engine userbuffers (communication-GEMM overlap) kernels"},
};

constexpr KernelNamePattern kMemoryKernelPatterns[] = {
    {"__amd_rocclr_copy",
     "ROCm runtime blit kernels that perform hipMemcpy* when the copy runs on the shader cores "
     "rather than an SDMA engine (copyBuffer, copyBufferRect, copyImage, ...)"},
    {"__amd_rocclr_fill", "ROCm runtime blit kernels that implement hipMemset* (fillBuffer*)"},
};

constexpr TypeMarker kTypeMarkers[] = {
    // fp4 / fp6 (no MathPrecision value: reported as tensor cores of unknown type)
    {"e2m1", P::kTensorCoreUnknownType, 0},
    {"nvfp4", P::kTensorCoreUnknownType, 0},
    {"mxfp4", P::kTensorCoreUnknownType, 0},
    // fp8
    {"e4m3", P::kFp8TensorCore, 0},
    {"e5m2", P::kFp8TensorCore, 0},
    {"fp8", P::kFp8TensorCore, 0},
    {"float8", P::kFp8TensorCore, 0},
    {"f8f8", P::kFp8TensorCore, 0},
    // int8 ("uint8_t" is storage of anything, not an int8 GEMM)
    {"i8i8", P::kInt8TensorCore, 0},
    {"int8", P::kInt8TensorCore, 'u'},
    // bf16 (before fp16: "bfloat16" contains "float16", "bf16" contains "f16", "bhalf" "half")
    {"bf16", P::kBf16TensorCore, 0},
    {"bfloat16", P::kBf16TensorCore, 0},
    {"bhalf", P::kBf16TensorCore, 0},
    // fp16
    {"fp16", P::kFp16TensorCore, 0},
    {"f16", P::kFp16TensorCore, 'b'},
    {"half", P::kFp16TensorCore, 'b'},
    {"float16", P::kFp16TensorCore, 'b'},
    // tf32 (before fp32: "tf32" contains "f32", "tfloat32" contains "float")
    {"tf32", P::kTf32TensorCore, 0},
    {"tfloat32", P::kTf32TensorCore, 0},
    {"xf32", P::kTf32TensorCore, 0},
    // fp64 ("double" is not a marker: it is also an accumulator / scalar type of fp32 kernels,
    // e.g. MIOpen naive_conv_*_float_double_float)
    {"f64", P::kFp64, 0},
    // fp32: last, because almost every name mentions its fp32 accumulator somewhere
    {"fp32", P::kFp32Simt, 0},
    {"f32", P::kFp32Simt, 't'},
    {"float", P::kFp32Simt, 't'},
};

constexpr std::string_view kTensorCoreHints[] = {
    "tensorop", "wmma", "hmma", "imma", "xmma", "wgmma", "gmma", "tcgen05", "mfma", "xdl",
};

using NM = NameMatch;
using NS = NameScope;
using PF = PrecisionFrom;
using TF = TensorCoreFrom;

constexpr MathRule kMathRules[] = {
    // --- Attention. First: FlashAttention / FMHA kernels are CUTLASS instantiations too.
    {"flash-attention", "flash_fwd|flash_bwd|flash::", NM::kContains, NS::kFull, "", "",
     PF::kTypeMarkers, P::kTensorCoreUnknownType, TF::kYes,
     "FlashAttention 2/3: flash::flash_fwd_kernel, flash_fwd_splitkv_kernel, flash_bwd_*, FA3 "
     "flash::FlashAttnFwdSm90 inside cutlass::device_kernel, PyTorch's pytorch_flash::; "
     "fp16/bf16/fp8 only; element type from the template arguments"},
    {"xformers-fmha", "fmha_cutlassF|fmha_cutlassB", NM::kContains, NS::kFull, "", "",
     PF::kXformersFmha, P::kUnknown, TF::kFromName,
     "PyTorch / xformers memory-efficient attention fmha_cutlass{F,B}_<f32|f16|bf16>_..._sm<N>. "
     "Per mem_eff_attention/gemm_kernel_utils.h: f32 on sm80+ runs on tensor cores with "
     "OpMultiplyAddFastF32 (3xTF32), f32 below sm80 on CUDA cores; f16/bf16 on tensor cores from "
     "sm75, f16 also on sm70"},
    {"fmha", "fmha", NM::kContainsNoCase, NS::kShort, "", "", PF::kTypeMarkers,
     P::kTensorCoreUnknownType, TF::kYes,
     "other fused multi-head attention kernels (TensorRT-LLM / cuDNN fmha_v2_*, fmha_*)"},
    {"cudnn-sdpa", "sdpa", NM::kContainsNoCase, NS::kShort, "", "", PF::kFixed,
     P::kTensorCoreUnknownType, TF::kYes,
     "cuDNN runtime-compiled SDPA (flash) attention kernels; their names say f16 for bf16 too "
     "(the H200 lab's bf16 autocast run: BFloat16 inputs, ..._wgmma_f16_... kernels), so the "
     "name gives no type"},
    {"flashinfer-prefill", "flashinfer::", NM::kContains, NS::kFull, "Prefill|MLA", "",
     PF::kTypeMarkers, P::kTensorCoreUnknownType, TF::kYes,
     "FlashInfer prefill and MLA attention (tensor cores)"},
    {"flashinfer-decode", "flashinfer::", NM::kContains, NS::kFull, "Decode", "", PF::kTypeMarkers,
     P::kUnknown, TF::kNo,
     "FlashInfer decode attention: CUDA cores unless use_tensor_cores was set, which the name "
     "does not say"},
    {"paged-attention", "paged_attention", NM::kContainsNoCase, NS::kShort, "", "",
     PF::kTypeMarkers, P::kUnknown, TF::kNo,
     "vLLM paged_attention_v1/v2 kernels (dot products on CUDA cores)"},
    {"attention-kernel", "attention_kernel|AttentionKernel", NM::kContains, NS::kShort, "", "",
     PF::kTypeMarkers, P::kUnknown, TF::kIfHint,
     "other attention kernels (older xformers attention_kernel_batched<AttentionKernel<...>>)"},
    {"attn-fwd-bwd", "attn_fwd|attn_bwd", NM::kContainsNoCase, NS::kShort, "", "", PF::kFixed,
     P::kUnknown, TF::kNo,
     "Triton / custom attention kernels (the Triton tutorial's _attn_fwd); type and unit are not "
     "in the name"},

    // --- cuBLASLt, cuBLAS and cuDNN kernel families.
    {"nvjet", "nvjet_", NM::kContains, NS::kFull, "", "", PF::kNvjet, P::kTensorCoreUnknownType,
     TF::kYes,
     "cuBLASLt GEMMs on Hopper/Blackwell (CUDA 12.x+): nvjet_[smNN_]<types>_<tile>_...; a 3-letter "
     "type field starting with t is bf16 (tst), with h fp16 (hsh, hss); other type fields: "
     "tensor cores, type unknown"},
    {"xmma-f32-simt", "xmma_gemm_f32f32_f32f32_f32", NM::kContains, NS::kFull, "", "", PF::kFixed,
     P::kFp32Simt, TF::kNo,
     "cuBLAS's fp32 xmma GEMMs without TF32 (sm80_xmma_gemm_f32f32_f32f32_f32_*: PyTorch's default "
     "allow_tf32=False on an H200 runs them at 44-54 TFLOP/s, the CUDA-core fp32 rate, never the "
     "411 of TF32: gpu_lab_h200 B1); TF32 ones name tf32 (tf32f32_tf32f32_f32)"},
    {"xmma", "xmma_", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers, P::kTensorCoreUnknownType,
     TF::kYes,
     "cuBLAS / cuDNN xmma kernels: sm80_xmma_gemm_*, sm90_xmma_gemm_*, "
     "sm80_xmma_{fprop,dgrad,wgrad}_implicit_gemm_*, xmma_sparse_*; the type fields follow "
     "(bf16bf16_bf16f32_f32, f16f16_f16f32_f32, tf32f32_tf32f32_f32, e4m3..., i8i8_i8i32_f32, "
     "f64f64_f64f64_f64)"},
    {"mma-int", "i8816|i8832|i16816|i16832|i16864|imma", NM::kContains, NS::kFull, "", "",
     PF::kFixed, P::kInt8TensorCore, TF::kYes,
     "integer MMA shapes with s32 accumulate: turing_int8_i8816gemm_*, "
     "ampere_int8_i16832gemm_int8_*, cutlass *_i16832gemm_s8_*; int4 shapes (i8832, i16864) land "
     "here too"},
    {"mma-h884", "h884", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kFp16TensorCore, TF::kYes,
     "Volta HMMA.884 with fp16 accumulate (volta_h884gemm_*, volta_h884cudnn_*)"},
    {"mma-s884", "s884", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kFp16TensorCore, TF::kYes,
     "Volta HMMA.884 with fp32 accumulate; Volta tensor cores take fp16 only "
     "(volta_fp16_s884gemm_fp16_*, volta_fp16_s884cudnn_fp16_*)"},
    {"mma-d884", "d884|dmma", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kFp64, TF::kYes,
     "fp64 tensor cores (DMMA.884 on A100/H100; cutlass *_d884gemm_*)"},
    {"mma-h1688-h16816", "h1688|h16816|hmma", NM::kContains, NS::kFull, "", "", PF::kFixed,
     P::kFp16TensorCore, TF::kYes,
     "fp16 accumulate implies fp16 inputs (turing_h1688gemm_*, ampere_h16816gemm_*); hmma = half "
     "MMA"},
    {"mma-s1688", "s1688", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers, P::kTf32TensorCore,
     TF::kYes,
     "16x8x8 MMA, fp32 accumulate: bf16 / fp16 / tf32 when the name says so "
     "(turing_fp16_s1688cudnn_fp16_*, cutlass_75_tensorop_bf16_s1688gemm_bf16_*, "
     "cutlass_tensorop_s1688fprop_optimized_tf32_*); with no type it is fp32 data on Ampere+ "
     "tensor cores, i.e. TF32 (cutlass_80_tensorop_s1688gemm_*): CUTLASS names carry element types "
     "only when they differ from the fp32 accumulator"},
    {"mma-c1688", "c1688", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers, P::kTf32TensorCore,
     TF::kYes, "complex fp32 GEMM on tensor cores (16x8x8 MMA, TF32)"},
    {"mma-s16816", "16816|s161616|s16832", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers,
     P::kTensorCoreUnknownType, TF::kYes,
     "16x8x16, 16x16x16 (WMMA) and 16x8x32 MMA with fp32 accumulate: fp16 or bf16 (fp8 for "
     "16x8x32) from the type fields (ampere_bf16_s16816gemm_bf16_*, ampere_fp16_s16816gemm_fp16_*, "
     "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_*)"},
    {"cudnn-scudnn", "scudnn", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers, P::kFp32Simt,
     TF::kNo,
     "cuDNN implicit-GEMM / Winograd convolutions on CUDA cores with fp32 compute "
     "(volta_scudnn_128x64_relu_interior_nn_v1, cudnn_infer_ampere_scudnn_*); with fp16 storage "
     "(volta_fp16_scudnn_fp16_*) the precision is unknown (fp16 on CUDA cores has no value)"},
    {"cudnn-hcudnn", "hcudnn", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kUnknown, TF::kNo,
     "cuDNN half-precision convolutions on CUDA cores"},
    {"cudnn-dcudnn", "dcudnn", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kFp64, TF::kNo,
     "cuDNN fp64 convolutions"},
    {"sgemm", "sgemm", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers, P::kFp32Simt, TF::kNo,
     "fp32 GEMM on CUDA cores: cuBLAS {maxwell,volta,ampere}_sgemm_*, sgemm_largek_lds64, "
     "magma_sgemmEx_kernel, CUTLASS cutlass_80_simt_sgemm_*, cuDNN "
     "{implicit,explicit,precomputed}_convolve_sgemm (with __half template arguments: fp16 on "
     "CUDA cores, unknown)"},
    {"dgemm", "dgemm", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kFp64, TF::kNo,
     "fp64 GEMM on CUDA cores (volta_dgemm_*, cutlass *_simt_dgemm_*)"},
    {"hgemm", "hgemm", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kFp16TensorCore,
     TF::kIfHint,
     "fp16 GEMM: on CUDA cores (maxwell_hgemm_*, cutlass *_simt_hgemm_*: unknown, no value for "
     "fp16 SIMT) unless a tensor-core hint is in the name (hgemm_wmma_*)"},
    {"cgemm", "cgemm|Cgemm", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kFp32Simt, TF::kNo,
     "complex fp32 GEMM on CUDA cores (volta_cgemm_*, ampere_gcgemm_* (Gauss), "
     "fermiCgemm_v3_kernel; also the pointwise product of FFT convolutions)"},
    {"zgemm", "zgemm|Zgemm", NM::kContains, NS::kFull, "", "", PF::kFixed, P::kFp64, TF::kNo,
     "complex fp64 GEMM"},
    {"pyprof-cudnn-tc",
     "dgrad_1x1_stride_2x2|first_layer_wgrad_kernel|conv1x1|conv2d_c1_k1|direct_group",
     NM::kContains, NS::kFull, "", "", PF::kTypeMarkers, P::kTensorCoreUnknownType, TF::kYes,
     "cuDNN convolution kernels that NVIDIA PyProf (and so tb_plugin) lists as tensor-core "
     "kernels; taken on PyProf's word"},
    {"cudnn-direct-conv", "wgrad_alg|dgrad_engine|dgrad2d_alg|conv2d_grouped_direct|convolve",
     NM::kContains, NS::kFull, "", "", PF::kTypeMarkers, P::kUnknown, TF::kNo,
     "cuDNN direct convolution engines on CUDA cores (cudnn::cnn::wgrad_alg0_engine<float, ...>, "
     "cudnn::detail::dgrad_engine<float, ...>); element type from the template arguments"},
    {"winograd", "winograd", NM::kContainsNoCase, NS::kShort, "",
     "winograd_nonfused|generateWinogradTiles", PF::kTypeMarkers, P::kUnknown, TF::kIfHint,
     "fused Winograd convolutions (cudnn::winograd::winograd3x3Kernel<__half, float, ...>); the "
     "non-fused transform kernels are not math (their products run as separate GEMM kernels)"},

    // --- CUTLASS names not caught by an MMA-shape row.
    {"cutlass-tensorop", "tensorop_", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers,
     P::kTensorCoreUnknownType, TF::kYes,
     "CUTLASS procedural names cutlass[3x]_<arch>_tensorop_* without a known MMA shape "
     "(cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_*, "
     "cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_*)"},
    {"cutlass-simt", "_simt_", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers, P::kUnknown,
     TF::kNo,
     "CUTLASS procedural names cutlass_<arch>_simt_* other than sgemm / dgemm / hgemm (simt_igemm "
     "is int8 dp4a: unknown)"},
    {"cutlass-template", "cutlass", NM::kContains, NS::kFull,
     "gemm|Gemm|GEMM|conv|Conv|Mma|fprop|dgrad|wgrad", "", PF::kTypeMarkers,
     P::kTensorCoreUnknownType, TF::kUnlessSimt,
     "CUTLASS template instantiations (cutlass::device_kernel<cutlass::gemm::kernel::"
     "GemmUniversal<...>>, cutlass::Kernel2<...>, copies in other namespaces such as "
     "cutlass_cudnn_train, mangled _ZN...cutlass...); element types from the template arguments "
     "(cutlass::bfloat16_t, cutlass::half_t, cutlass::float_e4m3_t, tfloat32_t, float); tensor "
     "cores unless the name says Simt. Split-K reductions (ReduceSplitK) name no GEMM and are not "
     "math"},

    // --- Other GEMM libraries.
    {"deep-gemm", "deep_gemm", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers,
     P::kFp8TensorCore, TF::kYes,
     "DeepGEMM (Hopper/Blackwell wgmma / tcgen05): FP8 unless the name says bf16"},
    {"marlin", "marlin|Marlin", NM::kContains, NS::kFull, "", "", PF::kFixed,
     P::kTensorCoreUnknownType, TF::kYes,
     "Marlin mixed-input GEMMs (int4/int8/fp8 weights, fp16/bf16 math on tensor cores); the "
     "math type is the activations' type, which a marker scan cannot tell from the weight type"},
    {"trtllm-gen-bmm", "bmm_", NM::kPrefix, NS::kFull, "", "", PF::kTypeMarkers,
     P::kTensorCoreUnknownType, TF::kYes,
     "TensorRT-LLM trtllm-gen batched GEMMs (bmm_E4m3_E4m3E4m3_Fp32_*, bmm_Bfloat16_E2m1E2m1_*: "
     "output type first, then A and B)"},

    // --- ROCm.
    {"tensile", "Cijk_", NM::kContains, NS::kFull, "", "", PF::kTensile, P::kUnknown, TF::kFromName,
     "ROCm Tensile / hipBLASLt: Cijk_<A indices>_<B indices>_<DataType char>[<Dest><Compute>_]"
     "[B][H]...: S fp32, D fp64, H fp16, B bf16, X xf32, I8 / 4xi8 int8, F8 / B8 / F8N / B8N / "
     "F8B8 ... fp8, C / Z complex; _MI<m>x<n>x<k> = MFMA matrix instructions (matrix cores), "
     "absent = vector ALU. fp32 on MFMA has no MathPrecision value (tensor cores, unknown type)"},
    {"composable-kernel", "void ck::|ck::|void ck_tile::|ck_tile::", NM::kPrefix, NS::kFull,
     "gemm|Gemm|GEMM|conv|Conv|fmha|Fmha", "", PF::kTypeMarkers, P::kUnknown, TF::kIfHint,
     "AMD Composable Kernel (ck::kernel_gemm_xdl_cshuffle_v3<...ck::half_t...>); xdl / wmma / "
     "mfma in the name = matrix cores"},
    {"miopen-igemm-xdlops", "igemm_", NM::kContains, NS::kFull, "gtcx", "", PF::kTypeMarkers,
     P::kTensorCoreUnknownType, TF::kYes,
     "MIOpen implicit-GEMM convolutions igemm_{fwd,bwd,wrw}_gtcx*_<layout>_<fp32|fp16|bf16>_* "
     "(gtcx = xdlops, i.e. MFMA)"},
    {"miopen-naive-conv", "naive_conv", NM::kContains, NS::kFull, "", "", PF::kTypeMarkers,
     P::kUnknown, TF::kNo,
     "MIOpen naive (reference) convolutions naive_conv_*_<in>_<acc>_<out>, vector ALU"},

    // --- Triton (names carry neither element type nor unit).
    {"triton-template", "triton_tem_", NM::kPrefix, NS::kFull, "", "", PF::kFixed, P::kUnknown,
     TF::kNo,
     "torch.compile (Inductor) Triton templates triton_tem_fused_{mm,addmm,bmm,convolution,...}_N "
     "(all GEMM / conv / flex-attention): tl.dot uses tensor cores for 16/8-bit inputs and for "
     "fp32 only when TF32 is allowed, which the name does not say"},
    {"triton-matmul", "matmul_kernel|fused_moe_kernel", NM::kContainsNoCase, NS::kShort, "", "",
     PF::kFixed, P::kUnknown, TF::kNo,
     "Triton kernels named after their Python function (matmul_kernel of the Triton tutorial, "
     "vLLM / sglang fused_moe_kernel)"},

    // --- Generic fallbacks.
    {"gemv", "gemv", NM::kContainsNoCase, NS::kShort, "", "", PF::kTypeMarkers, P::kUnknown,
     TF::kIfHint,
     "matrix-vector products (cuBLAS gemv2T_kernel_val, gemv2N_kernel, gemvNSP_kernel, "
     "internal::gemvx::kernel); memory-bound, CUDA cores"},
    {"tc-instruction", "wgmma|tcgen05|gmma", NM::kContainsNoCase, NS::kFull, "", "",
     PF::kTypeMarkers, P::kTensorCoreUnknownType, TF::kYes,
     "kernels that name Hopper/Blackwell tensor-core instructions (wgmma, tcgen05, GMMA)"},
    {"gemm", "gemm", NM::kContainsNoCase, NS::kShort, "", "fbgemm", PF::kTypeMarkers, P::kUnknown,
     TF::kIfHint,
     "any other name with gemm (cuBLAS gemmk1_kernel, gemmSN_*, custom GEMMs); tensor cores only "
     "with a hint in the name; FBGEMM's non-GEMM kernels (fbgemm_gpu::*) are excluded"},
    {"conv", "conv1d|conv2d|conv3d|conv_depthwise|depthwise_conv|convolution", NM::kContainsNoCase,
     NS::kShort, "", "", PF::kTypeMarkers, P::kUnknown, TF::kIfHint,
     "other convolutions (PyTorch conv_depthwise2d_forward_kernel<float>, ...)"},
};

constexpr std::string_view kTbPluginTensorCorePatterns[] = {
    "h884",
    "s884",
    "h1688",
    "s1688",
    "hmma",
    "i8816",
    "16816",
    "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel",
    "conv1x1",
    "conv2d_c1_k1",
    "direct_group",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm",
    "xmma_sparse_gemm",
    "c1688",
};

// ---------------------------------------------------------------------------------------------
// Precision helpers.

bool IsTensorCorePrecision(MathPrecision p) {
  switch (p) {
    case P::kTf32TensorCore:
    case P::kFp16TensorCore:
    case P::kBf16TensorCore:
    case P::kFp8TensorCore:
    case P::kInt8TensorCore:
    case P::kTensorCoreUnknownType:
      return true;
    default:
      return false;
  }
}

bool HasTensorCoreHint(std::string_view name) {
  for (std::string_view hint : kTensorCoreHints) {
    if (ContainsNoCase(name, hint)) return true;
  }
  return false;
}

bool MarkerOccurs(std::string_view name, const TypeMarker& m) {
  for (size_t pos = FindNoCase(name, m.text); pos != std::string_view::npos;
       pos = FindNoCase(name, m.text, pos + 1)) {
    if (m.not_after == 0 || pos == 0 || Lower(name[pos - 1]) != m.not_after) return true;
  }
  return false;
}

// The highest-priority type marker in `name`, or kNone.
MathPrecision ScanTypeMarkers(std::string_view name) {
  for (const TypeMarker& m : kTypeMarkers) {
    if (MarkerOccurs(name, m)) return m.precision;
  }
  return P::kNone;
}

struct Resolved {
  MathPrecision precision;
  bool tensor_core;
};

// Combines the type read from the name (kNone if none) with the unit the row decided. fp32 on
// tensor cores is TF32; 16/8-bit types on CUDA cores become kUnknown (MathPrecision has no value
// for them); TF32 exists only on tensor cores.
Resolved Combine(MathPrecision marker, bool tensor_core, MathPrecision row_default) {
  if (marker == P::kNone) {
    MathPrecision p = row_default;
    if (tensor_core && (p == P::kUnknown || p == P::kFp32Simt)) {
      p = p == P::kFp32Simt ? P::kTf32TensorCore : P::kTensorCoreUnknownType;
    }
    if (!tensor_core && IsTensorCorePrecision(p)) p = P::kUnknown;
    return {p, tensor_core};
  }
  switch (marker) {
    case P::kFp32Simt:  // fp32 data on tensor cores is TF32 (or 3xTF32)
      return {tensor_core ? P::kTf32TensorCore : P::kFp32Simt, tensor_core};
    case P::kTf32TensorCore:  // TF32 exists only on tensor cores
      return {P::kTf32TensorCore, true};
    case P::kFp64:
      return {P::kFp64, tensor_core};
    default:
      return {tensor_core ? marker : P::kUnknown, tensor_core};
  }
}

// ROCm Tensile / hipBLASLt: "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_..." The DataType
// char(s) start the fourth '_' field (Tensile SolutionStructs.py ProblemType.__str__, DataType
// properties in Tensile's DataType.py).
Resolved ResolveTensile(std::string_view name) {
  std::string_view rest = Tail(name, name.find("Cijk_"));
  size_t field = 0, start = 0;
  std::string_view type;
  for (size_t i = 0; i <= rest.size(); ++i) {
    if (i == rest.size() || rest[i] == '_') {
      if (field == 3) {
        type = rest.substr(start, i - start);
        break;
      }
      ++field;
      start = i + 1;
    }
  }
  bool mfma = false;
  for (size_t pos = rest.find("_MI"); pos != std::string_view::npos;
       pos = rest.find("_MI", pos + 1)) {
    if (pos + 3 < rest.size() && IsDigit(rest[pos + 3])) {
      mfma = true;
      break;
    }
  }
  auto starts = [&](std::string_view p) { return type.substr(0, p.size()) == p; };
  MathPrecision p = P::kUnknown;
  if (starts("F8") || starts("B8")) {
    p = mfma ? P::kFp8TensorCore : P::kUnknown;
  } else if (starts("F6") || starts("B6") || starts("F4")) {
    p = mfma ? P::kTensorCoreUnknownType : P::kUnknown;
  } else if (starts("I8") || starts("4xi8")) {
    p = mfma ? P::kInt8TensorCore : P::kUnknown;
  } else if (starts("I")) {
    p = P::kUnknown;  // int32 / int64: no matrix instructions
  } else if (starts("S") || starts("C")) {
    // fp32 (complex fp32) on MFMA is full fp32 on matrix cores: no MathPrecision value.
    p = mfma ? P::kTensorCoreUnknownType : P::kFp32Simt;
  } else if (starts("D") || starts("Z")) {
    p = P::kFp64;
  } else if (starts("H")) {
    p = mfma ? P::kFp16TensorCore : P::kUnknown;
  } else if (starts("B")) {
    p = mfma ? P::kBf16TensorCore : P::kUnknown;
  } else if (starts("X")) {
    p = P::kTf32TensorCore;  // xf32 exists only as an MFMA type
    mfma = true;
  } else if (mfma) {
    p = P::kTensorCoreUnknownType;
  }
  return {p, mfma};
}

// cuBLASLt "nvjet_[smNN_]<types>_...". Only the two type fields with public evidence are read
// (docs/kernel-classes.md): "tst" (bf16) and "hsh"/"hss" (fp16).
Resolved ResolveNvjet(std::string_view name) {
  std::string_view rest = Tail(name, name.find("nvjet_") + 6);
  if (rest.substr(0, 2) == "sm" && rest.size() > 2 && IsDigit(rest[2])) {
    size_t bar = rest.find('_');
    rest = bar == std::string_view::npos ? std::string_view() : Tail(rest, bar + 1);
  }
  std::string_view type = rest.substr(0, rest.find('_'));
  MathPrecision p = P::kTensorCoreUnknownType;
  if (type.size() == 3 && type[1] == 's') {
    if (type[0] == 't') p = P::kBf16TensorCore;
    if (type[0] == 'h') p = P::kFp16TensorCore;
  }
  return {p, true};
}

// "fmha_cutlassF_f32_aligned_64x64_rf_sm80": dtype field and target architecture.
Resolved ResolveXformersFmha(std::string_view name) {
  const size_t at = name.find("fmha_cutlass");
  std::string_view rest = Tail(name, at + 14);  // past "fmha_cutlassF_"
  std::string_view dtype = rest.substr(0, rest.find('_'));
  int sm = -1;
  for (size_t pos = rest.find("_sm"); pos != std::string_view::npos;
       pos = rest.find("_sm", pos + 1)) {
    size_t i = pos + 3;
    if (i < rest.size() && IsDigit(rest[i])) {
      sm = 0;
      while (i < rest.size() && IsDigit(rest[i])) sm = sm * 10 + (rest[i++] - '0');
    }
  }
  if (dtype == "f32") {
    if (sm >= 80) return {P::kTf32TensorCore, true};
    if (sm >= 0) return {P::kFp32Simt, false};
    return {P::kUnknown, false};
  }
  if (dtype == "f16" || dtype == "bf16") {
    const MathPrecision tc = dtype == "f16" ? P::kFp16TensorCore : P::kBf16TensorCore;
    if (sm >= 75 || (sm == 70 && dtype == "f16")) return {tc, true};
    if (sm >= 0) return {P::kUnknown, false};
    return {tc, true};  // no architecture suffix: these dtypes are tensor-core kernels from sm75
  }
  return {P::kUnknown, false};
}

bool RuleMatches(const MathRule& r, std::string_view name) {
  // `name` is the full name or the short name, as the row's scope says.
  if (!MatchesAlternatives(name, r.pattern, r.match)) return false;
  // `also` and `unless` are substrings anywhere in the name, with the row's case rule.
  const NameMatch sub =
      r.match == NameMatch::kContainsNoCase ? NameMatch::kContainsNoCase : NameMatch::kContains;
  if (!r.also.empty() && !MatchesAlternatives(name, r.also, sub)) return false;
  if (!r.unless.empty() && MatchesAlternatives(name, r.unless, sub)) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// HTA regex helpers. Python's "." does not match '\n', so ".*X" only finds X on the first line.

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool FirstLineContains(std::string_view s, std::string_view needle, size_t from = 0) {
  std::string_view line = s.substr(0, s.find('\n'));
  if (from > line.size()) return false;
  return line.find(needle, from) != std::string_view::npos;
}

// ---------------------------------------------------------------------------------------------
// Short names.

constexpr std::string_view kAnonymousNamespace = "(anonymous namespace)::";

// True if some '<' or '(' directly follows an identifier character or a '>' ("kernel<", "f(",
// "kernel<...>("): the shape of a C++ signature, unlike "Memcpy HtoD (Pinned -> Device)".
bool LooksLikeSignature(std::string_view s) {
  for (size_t i = 1; i < s.size(); ++i) {
    if ((s[i] == '<' || s[i] == '(') && (IsIdentChar(s[i - 1]) || s[i - 1] == '>')) return true;
  }
  return false;
}

// Length of an operator token starting at `i` ("operator()", "operator<<", ...) or 0. Its '<',
// '>', '(' and ')' are not brackets.
size_t OperatorTokenLength(std::string_view s, size_t i) {
  constexpr std::string_view kOp = "operator";
  if (s.substr(i, kOp.size()) != kOp) return 0;
  if (i > 0 && IsIdentChar(s[i - 1])) return 0;
  size_t j = i + kOp.size();
  if (j < s.size() && IsIdentChar(s[j])) return 0;  // "operator_foo" is an identifier
  if (s.substr(j, 2) == "()" || s.substr(j, 2) == "[]") return j + 2 - i;
  size_t k = j;
  constexpr std::string_view kSymbols = "<>=!+-*/%^&|~";
  while (k < s.size() && k < j + 3 && kSymbols.find(s[k]) != std::string_view::npos) ++k;
  return k == j ? 0 : k - i;
}

bool IsWrapperComponent(std::string_view short_name) {
  size_t colon = short_name.rfind("::");
  std::string_view last =
      colon == std::string_view::npos ? short_name : short_name.substr(colon + 2);
  return last == "Kernel" || last == "Kernel2" || last == "device_kernel";
}

}  // namespace

// ---------------------------------------------------------------------------------------------

constexpr EnumNames<KernelClass, 5> kKernelClassNames(
    {KernelClass::kCompute, "compute"}, {KernelClass::kCommunication, "communication"},
    {KernelClass::kMemory, "memory"}, {KernelClass::kSync, "sync"}, {KernelClass::kOther, "other"});

const char* KernelClassName(KernelClass c) { return CNameOf(kKernelClassNames, c); }

std::span<const KernelNamePattern> CommunicationPatterns() { return kCommunicationPatterns; }
std::span<const KernelNamePattern> MemoryKernelPatterns() { return kMemoryKernelPatterns; }

const KernelNamePattern* MatchCommunicationPattern(std::string_view name) {
  const std::string short_name = ShortKernelName(name);
  for (const KernelNamePattern& p : kCommunicationPatterns) {
    if (ContainsWordStartNoCase(short_name, p.pattern)) return &p;
  }
  return nullptr;
}

KernelClass ClassifyGpuActivity(GpuKind kind, std::string_view name, bool has_collective_args) {
  switch (kind) {
    case GpuKind::kMemcpy:
    case GpuKind::kMemset:
      return KernelClass::kMemory;
    case GpuKind::kSync:
      return KernelClass::kSync;
    case GpuKind::kKernel:
      break;
  }
  // Collective args come from the NCCL profiler hooks: proof regardless of the name.
  if (has_collective_args) return KernelClass::kCommunication;
  if (MatchCommunicationPattern(name) != nullptr) return KernelClass::kCommunication;
  for (const KernelNamePattern& p : kMemoryKernelPatterns) {
    if (Contains(name, p.pattern)) return KernelClass::kMemory;
  }
  return KernelClass::kCompute;
}

// ---------------------------------------------------------------------------------------------

HtaKernelType HtaKernelTypeOf(std::string_view n) {
  // COMMUNICATION: (^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)
  if (StartsWith(n, "nccl") || StartsWith(n, "hip") || StartsWith(n, "hccl") ||
      FirstLineContains(n, "ncclKernel")) {
    return HtaKernelType::kCommunication;
  }
  // MEMORY: (^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)
  if (StartsWith(n, "Memcpy") || StartsWith(n, "hipMemcpy") || StartsWith(n, "Memset") ||
      StartsWith(n, "hipMemset") || StartsWith(n, "dma")) {
    return HtaKernelType::kMemory;
  }
  // COMPUTATION: matches none of ^nccl, .*Memcpy, .*Memset, .*dma, ^.*Sync, ^Stream Wait Event,
  // cuda.*LaunchKernel, ^runFunction, ^hip, ^job_exe, ^packet, ^pe_exe, ^cpum_exe_subgraph,
  // ^hccl, ^collective_subgraph_execution.
  const bool excluded = StartsWith(n, "nccl") || FirstLineContains(n, "Memcpy") ||
                        FirstLineContains(n, "Memset") || FirstLineContains(n, "dma") ||
                        FirstLineContains(n, "Sync") || StartsWith(n, "Stream Wait Event") ||
                        (StartsWith(n, "cuda") && FirstLineContains(n, "LaunchKernel", 4)) ||
                        StartsWith(n, "runFunction") || StartsWith(n, "hip") ||
                        StartsWith(n, "job_exe") || StartsWith(n, "packet") ||
                        StartsWith(n, "pe_exe") || StartsWith(n, "cpum_exe_subgraph") ||
                        StartsWith(n, "hccl") || StartsWith(n, "collective_subgraph_execution");
  return excluded ? HtaKernelType::kOther : HtaKernelType::kComputation;
}

constexpr EnumNames<HtaKernelType, 4> kHtaKernelTypeNames(
    {HtaKernelType::kCommunication, "COMMUNICATION"}, {HtaKernelType::kMemory, "MEMORY"},
    {HtaKernelType::kComputation, "COMPUTATION"}, {HtaKernelType::kOther, "OTHER"});

const char* HtaKernelTypeName(HtaKernelType t) { return CNameOf(kHtaKernelTypeNames, t); }

// ---------------------------------------------------------------------------------------------

std::string ShortKernelName(std::string_view name) {
  if (!LooksLikeSignature(name)) return std::string(name);

  std::string_view s = name;
  // ROCm-style "... [clone .kd]" suffixes.
  for (size_t clone = s.rfind(" [clone "); clone != std::string_view::npos && s.back() == ']';
       clone = s.rfind(" [clone ")) {
    s = s.substr(0, clone);
  }

  std::string out;
  out.reserve(64);
  int depth = 0;
  for (size_t i = 0; i < s.size();) {
    if (s.substr(i, kAnonymousNamespace.size()) == kAnonymousNamespace) {
      i += kAnonymousNamespace.size();
      continue;
    }
    if (s.substr(i, 2) == "->") {  // HTA removes "->" before bracket matching; so do we
      i += 2;
      continue;
    }
    if (size_t op = OperatorTokenLength(s, i); op > 0) {
      if (depth == 0) out.append(s.substr(i, op));
      i += op;
      continue;
    }
    const char c = s[i++];
    if (c == '<' || c == '(') {
      ++depth;
    } else if (c == '>' || c == ')') {
      if (depth > 0) --depth;
    } else if (depth == 0) {
      out.push_back(c);
    }
  }

  // Trailing qualifiers of member functions, then keep the last space-separated token.
  auto trim_right = [&out] {
    while (!out.empty() && out.back() == ' ') out.pop_back();
  };
  trim_right();
  for (std::string_view q : {std::string_view(" const"), std::string_view(" volatile")}) {
    if (out.size() > q.size() && std::string_view(out).substr(out.size() - q.size()) == q) {
      out.resize(out.size() - q.size());
      trim_right();
    }
  }
  const size_t space = out.rfind(' ');
  if (space != std::string::npos) out.erase(0, space + 1);
  if (out.empty()) return std::string(name);

  // A launch wrapper keeps a plain-identifier template argument: it names the kernel.
  if (IsWrapperComponent(out)) {
    const size_t at = s.find(out + "<");
    if (at != std::string_view::npos) {
      const size_t open = at + out.size();
      int d = 0;
      size_t close = open;
      for (; close < s.size(); ++close) {
        if (s[close] == '<') ++d;
        if (s[close] == '>' && --d == 0) break;
      }
      if (close < s.size()) {
        std::string_view arg = s.substr(open + 1, close - open - 1);
        while (!arg.empty() && arg.front() == ' ') arg.remove_prefix(1);
        while (!arg.empty() && arg.back() == ' ') arg.remove_suffix(1);
        bool plain = !arg.empty();
        for (char ch : arg) plain = plain && IsIdentChar(ch);
        if (plain) out.append("<").append(arg).append(">");
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

constexpr EnumNames<MathPrecision, 10> kMathPrecisionNames(
    {P::kNone, "none"}, {P::kFp32Simt, "fp32_simt"}, {P::kTf32TensorCore, "tf32_tc"},
    {P::kFp16TensorCore, "fp16_tc"}, {P::kBf16TensorCore, "bf16_tc"}, {P::kFp8TensorCore, "fp8_tc"},
    {P::kInt8TensorCore, "int8_tc"}, {P::kTensorCoreUnknownType, "tc_unknown_type"},
    {P::kFp64, "fp64"}, {P::kUnknown, "unknown"});

const char* MathPrecisionName(MathPrecision p) { return CNameOf(kMathPrecisionNames, p); }

std::span<const MathRule> MathRules() { return kMathRules; }
std::span<const TypeMarker> TypeMarkers() { return kTypeMarkers; }
std::span<const std::string_view> TensorCoreHints() { return kTensorCoreHints; }

MathKernelInfo ClassifyMathKernel(std::string_view name) {
  std::string short_name;  // computed when the first short-scope row is reached
  bool have_short = false;
  for (const MathRule& r : kMathRules) {
    if (r.scope == NameScope::kShort && !have_short) {
      short_name = ShortKernelName(name);
      have_short = true;
    }
    if (!RuleMatches(r, r.scope == NameScope::kShort ? std::string_view(short_name) : name)) {
      continue;
    }
    Resolved res{P::kUnknown, false};
    switch (r.precision_from) {
      case PrecisionFrom::kTensile:
        res = ResolveTensile(name);
        break;
      case PrecisionFrom::kNvjet:
        res = ResolveNvjet(name);
        break;
      case PrecisionFrom::kXformersFmha:
        res = ResolveXformersFmha(name);
        break;
      case PrecisionFrom::kFixed:
      case PrecisionFrom::kTypeMarkers: {
        bool tc = false;
        switch (r.tensor_core) {
          case TensorCoreFrom::kYes:
            tc = true;
            break;
          case TensorCoreFrom::kNo:
          case TensorCoreFrom::kFromName:
            tc = false;
            break;
          case TensorCoreFrom::kUnlessSimt:
            tc = !ContainsNoCase(name, "simt");
            break;
          case TensorCoreFrom::kIfHint:
            tc = HasTensorCoreHint(name);
            break;
        }
        const MathPrecision marker =
            r.precision_from == PrecisionFrom::kTypeMarkers ? ScanTypeMarkers(name) : P::kNone;
        res = Combine(marker, tc, r.precision);
        break;
      }
    }
    return MathKernelInfo{true, res.precision, res.tensor_core, r.id};
  }
  return MathKernelInfo{};
}

bool TbPluginUsesTensorCores(std::string_view name) {
  for (std::string_view p : kTbPluginTensorCorePatterns) {
    if (Contains(name, p)) return true;
  }
  return false;
}

std::span<const std::string_view> TbPluginTensorCorePatterns() {
  return kTbPluginTensorCorePatterns;
}

std::map<int32_t, uint64_t> KernelsPerDevice(const GpuActivityTable& g) {
  std::map<int32_t, uint64_t> out;
  int32_t run_device = 0;
  uint64_t run = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] != GpuKind::kKernel) continue;
    if (run == 0 || g.device[i] != run_device) {
      if (run > 0) out[run_device] += run;
      run_device = g.device[i];
      run = 0;
    }
    ++run;
  }
  if (run > 0) out[run_device] += run;
  return out;
}

std::vector<KernelClass> ClassifyTraceGpuActivities(const Trace& t) {
  std::vector<KernelClass> out(t.gpu.size(), KernelClass::kCompute);
  std::vector<int8_t> kernel_name_class(t.strings.size(), -1);
  std::vector<bool> has_collective(t.gpu.size(), false);
  for (const CollectiveInfo& c : t.collectives) has_collective[c.gpu_index] = true;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    const GpuKind kind = t.gpu.kind[i];
    if (kind != GpuKind::kKernel || has_collective[i]) {
      out[i] = ClassifyGpuActivity(kind, t.Str(t.gpu.name[i]), has_collective[i]);
      continue;
    }
    int8_t& cached = kernel_name_class[t.gpu.name[i]];
    if (cached < 0)
      cached = static_cast<int8_t>(ClassifyGpuActivity(kind, t.Str(t.gpu.name[i]), false));
    out[i] = static_cast<KernelClass>(cached);
  }
  return out;
}

KernelClasses BuildKernelClasses(const Trace& t) {
  KernelClasses out;
  out.row = ClassifyTraceGpuActivities(t);
  out.name_slot.assign(t.strings.size(), KernelClasses::kNoSlot);
  // Which names a kernel row carries: only those get the (costlier) math classification.
  std::vector<bool> kernel_name(t.strings.size(), false);
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    const StringId n = t.gpu.name[i];
    if (t.gpu.kind[i] == GpuKind::kKernel) kernel_name[n] = true;
    if (out.name_slot[n] != KernelClasses::kNoSlot) continue;
    out.name_slot[n] = static_cast<uint32_t>(out.names.size());
    out.names.emplace_back();
  }
  for (StringId n = 0; n < out.name_slot.size(); ++n) {
    if (out.name_slot[n] == KernelClasses::kNoSlot) continue;
    KernelNameInfo& info = out.names[out.name_slot[n]];
    const std::string_view name = t.Str(n);
    info.hta = HtaKernelTypeOf(name);
    info.short_name = ShortKernelName(name);
    if (kernel_name[n]) info.math = ClassifyMathKernel(name);
  }
  return out;
}

}  // namespace gpuscope::analyze

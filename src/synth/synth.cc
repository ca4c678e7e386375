// Synthetic Kineto traces with planted, known bottlenecks (see gpuscope/synth.h and
// tests/synth_test_data.md for the event layout and the formulas behind SynthTruth).
//
// Model. One rank trains a small ViT-like network with DDP on one GPU: a conv patch stem
// ([8,3,512,512] fp32 images -> 8192 tokens of width 1024), `layers` transformer blocks, a
// classifier head with cross-entropy, and a fused AdamW step. Everything runs on one CPU thread;
// kernels, copies and memsets run on stream 7, the DDP bucket all-reduces on stream 20.
//
// Method. Each step is first simulated in its own time frame (int64 ns, origin = the end of the
// DataLoader wait): the CPU issues ops and CUDA runtime calls, stream 7 runs its work in launch
// order (start = max(ready, previous end + queue gap)), and blocking calls (.item() syncs,
// pageable H2D copies) wait for the stream. Then the planted quantities are solved for so the
// requested fractions hold exactly for that step, the step is placed on the absolute clock and
// serialized. Only one step's records are in memory at a time, so file size is unbounded.
//
// Ground truth per step (all ns), with G = end of the step's last GPU op:
//   step period        P = G_i - G_{i-1}   (= start-to-start distance of ProfilerStep#N)
//   DataLoader stall   W = idle gap on every stream before the step's first H2D copy = f_dl * P
//   exposed all-reduce X = time an NCCL kernel runs while no compute kernel runs     = f_comm * P
//   sync stall         S = Σ all-streams idle gap around each .item() sync's end     = f_sync * P
#include "gpuscope/synth.h"

#include "base/output_file.h"
#include "base/utf8.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace gpuscope {
namespace {

constexpr int64_t kUs = 1000;  // ns per µs
constexpr int64_t kMs = 1000 * kUs;
constexpr int64_t kSec = 1000 * kMs;
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kNegInf = INT64_MIN / 4;

constexpr int kComputeStream = 7;
constexpr int kNcclStream = 20;

// Model shapes. Tokens = batch 8 x 1024 patches of 16x16 px, hidden width 1024, 1000 classes.
constexpr int64_t kBatch = 8;
constexpr int64_t kTokens = 8192;
constexpr int64_t kHidden = 1024;
constexpr int64_t kClasses = 1000;
constexpr int64_t kInputBytes = kBatch * 3 * 512 * 512 * 4;  // fp32 images, 25,165,824 B
constexpr int64_t kLabelBytes = kBatch * 8;                  // int64 class ids
// Parameters: per block qkv + proj + fc1 + fc2 weights and biases, and 2 LayerNorms.
constexpr int64_t kLayerParams = 12 * kHidden * kHidden + 13 * kHidden;  // 12,596,224
constexpr int64_t kStemParams = 3 * 16 * 16 * kHidden + kHidden;         // 787,456
constexpr int64_t kHeadParams = kHidden * kClasses + kClasses;           // 1,025,000

// Step placement: ProfilerStep#N+1 starts kCpuLeadNs before the GPU finishes step N (the CPU is
// ahead of the GPU), so with no stall the DataLoader takes ~kCpuLeadNs and hides entirely behind
// the GPU's tail. The DataLoader never takes less than kMinDataLoaderNs.
constexpr int64_t kCpuLeadNs = 250 * kUs;
constexpr int64_t kMinDataLoaderNs = 30 * kUs;

// ---------------------------------------------------------------------------------------------
// Deterministic PRNG (splitmix64): identical options give identical bytes on every platform.

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(Mix64(seed)) {}
  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t Between(int64_t lo, int64_t hi) {                                // inclusive
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  double Jitter(double rel) { return 1.0 + rel * (2.0 * Unit() - 1.0); }

 private:
  uint64_t state_;
};

// ---------------------------------------------------------------------------------------------
// Kernels. Names are as CUPTI reports them; geometry is shared by both precisions.

enum KernelId : int16_t {
  kCastInput,
  kConvLayoutIn,
  kConvFprop,
  kConvLayoutOut,
  kLnFwd,
  kGemmQkv,
  kAttnFwd,
  kGemmProj,
  kAddKernel,
  kGemmFc1,
  kGelu,
  kGemmFc2,
  kMeanPool,
  kGemmHead,
  kLogSoftmaxFwd,
  kNllFwd,
  kNllBwd,
  kLogSoftmaxBwd,
  kGemmHeadDgrad,
  kGemmHeadWgrad,
  kBiasGrad,
  kMeanBwd,
  kGemmDgrad,
  kGemmWgrad,
  kGeluBwd,
  kLnBwdInput,
  kLnBwdGammaBeta,
  kAttnBwdPre,
  kAttnBwdMain,
  kAttnBwdPost,
  kConvWgrad,
  kAdamStepCount,
  kFusedAdam,
  kNcclAllReduce,
  kTinyLoop,  // planted tiny grid (tiny_grid_fraction): a per-parameter element-wise loop
  kNumKernels
};

struct KernelDef {
  const char* bf16_name;
  const char* fp32_name;  // nullptr: this kernel is not launched in fp32 runs
  int64_t bf16_ns;        // mean duration at the model's shapes in bf16 (ns)
  double fp32_factor;     // fp32 duration = bf16_ns * fp32_factor (planted precision effect)
  int regs;
  int smem;
  int grid[3];
  int block[3];
  int occupancy;
};

// Gemms and attention are compute bound (fp32 without TF32 ~2.6-2.8x slower than bf16 tensor
// cores); elementwise/norm kernels are bandwidth bound (2x the bytes). The loss and the optimizer
// run in fp32 in both modes, as under autocast.
const KernelDef kKernelDefs[kNumKernels] = {
    // kCastInput (autocast cast of the fp32 images; not needed in fp32 runs)
    {"void "
     "at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
     "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() "
     "const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned "
     "int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
     "at::native::memory::StoreWithCast<1> >(int, "
     "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
     "const::{lambda()#10}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, "
     "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
     "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
     nullptr,
     30 * kUs,
     1.0,
     26,
     0,
     {24576, 1, 1},
     {128, 1, 1},
     100},
    // kConvLayoutIn
    {"void cudnn::ops::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, "
     "(cudnnKernelDataType_t)0>(cudnn::ops::nchw2nhwc_params_t<float>, __nv_bfloat16 const*, "
     "__nv_bfloat16*)",
     "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, "
     "(cudnnKernelDataType_t)0>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)",
     18 * kUs,
     2.0,
     32,
     4224,
     {8, 16, 128},
     {256, 1, 1},
     100},
    // kConvFprop
    {"sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_stage3_"
     "warpsize2x2x1_g1_tensor16x8x16_kernel",
     "void cudnn::cnn::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, "
     "true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned "
     "long long, int, float, float, int, float const*, float const*, bool, int, int)",
     70 * kUs,
     2.6,
     230,
     98304,
     {8, 64, 1},
     {128, 1, 1},
     12},
    // kConvLayoutOut
    {"void cudnn::ops::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true, false, "
     "(cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>, __nv_bfloat16 const*, "
     "__nv_bfloat16*)",
     "void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false, "
     "(cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>, float const*, float*)",
     22 * kUs,
     2.0,
     32,
     4224,
     {32, 32, 8},
     {256, 1, 1},
     100},
    // kLnFwd
    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
     "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, "
     "float*, c10::BFloat16*)",
     "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, "
     "float, float const*, float const*, float const*, float*, float*, float*)",
     28 * kUs,
     2.0,
     38,
     0,
     {8192, 1, 1},
     {32, 4, 1},
     88},
    // kGemmQkv
    {"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
     "tensor16x8x16_kernel",
     "ampere_sgemm_128x64_tn",
     262 * kUs,
     2.6,
     230,
     81920,
     {24, 64, 1},
     {128, 1, 1},
     12},
    // kAttnFwd
    {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, "
     "false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, "
     "cutlass::bfloat16_t> >, false, true, false, false, true, true, false, "
     "false>(pytorch_flash::Flash_fwd_params)",
     "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
     190 * kUs,
     2.8,
     255,
     49152,
     {8, 8, 16},
     {128, 1, 1},
     6},
    // kGemmProj
    {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
     "volta_sgemm_128x64_nn",
     90 * kUs,
     2.6,
     238,
     65536,
     {8, 64, 1},
     {128, 1, 1},
     12},
    // kAddKernel
    {"void at::native::vectorized_elementwise_kernel<4, "
     "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, "
     "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
     "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
     "at::detail::Array<char*, 3>)",
     34 * kUs,
     2.0,
     28,
     0,
     {8192, 1, 1},
     {128, 1, 1},
     100},
    // kGemmFc1
    {"void "
     "cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(cutlass_"
     "80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8::Params)",
     "void "
     "cutlass::Kernel<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>(cutlass_80_simt_sgemm_128x64_8x5_"
     "nn_align1::Params)",
     345 * kUs,
     2.6,
     168,
     110592,
     {64, 128, 1},
     {128, 1, 1},
     12},
    // kGelu
    {"void at::native::vectorized_elementwise_kernel<4, "
     "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
     "const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, "
     "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
     "const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
     "void at::native::vectorized_elementwise_kernel<4, "
     "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
     "const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
     "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
     "const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
     88 * kUs,
     2.0,
     26,
     0,
     {32768, 1, 1},
     {128, 1, 1},
     100},
    // kGemmFc2
    {"ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn",
     "ampere_sgemm_128x128_tn",
     345 * kUs,
     2.6,
     232,
     98304,
     {4, 64, 1},
     {256, 1, 1},
     12},
    // kMeanPool
    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, "
     "at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4> "
     ">(at::native::ReduceOp<c10::BFloat16, at::native::MeanOps<float, float, float, float>, "
     "unsigned int, c10::BFloat16, 4>)",
     "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
     "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> "
     ">(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, "
     "float, 4>)",
     14 * kUs,
     2.0,
     32,
     16,
     {128, 1, 1},
     {32, 16, 1},
     50},
    // kGemmHead
    {"ampere_bf16_s16816gemm_bf16_64x64_ldg8_f2f_stages_64x5_tn",
     "ampere_sgemm_32x32_sliced1x4_tn",
     9 * kUs,
     2.6,
     154,
     73728,
     {16, 1, 1},
     {128, 1, 1},
     4},
    // kLogSoftmaxFwd
    {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
     "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
     5 * kUs,
     1.0,
     32,
     64,
     {8, 1, 1},
     {256, 1, 1},
     6},
    // kNllFwd
    {"void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, "
     "long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)",
     "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, "
     "long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)",
     4 * kUs,
     1.0,
     30,
     2048,
     {1, 1, 1},
     {32, 1, 1},
     0},
    // kNllBwd
    {"void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, "
     "long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, "
     "long)",
     "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, "
     "long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, "
     "long)",
     3 * kUs,
     1.0,
     22,
     0,
     {1, 1, 1},
     {32, 1, 1},
     0},
    // kLogSoftmaxBwd
    {"void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float "
     "const*, int)",
     "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
     "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float "
     "const*, int)",
     4 * kUs,
     1.0,
     40,
     64,
     {8, 1, 1},
     {256, 1, 1},
     6},
    // kGemmHeadDgrad
    {"ampere_bf16_s16816gemm_bf16_64x64_ldg8_f2f_stages_64x5_nn",
     "ampere_sgemm_32x32_sliced1x4_nn",
     8 * kUs,
     2.6,
     154,
     73728,
     {16, 1, 1},
     {128, 1, 1},
     4},
    // kGemmHeadWgrad
    {"ampere_bf16_s16816gemm_bf16_64x64_ldg8_f2f_stages_64x5_nt",
     "ampere_sgemm_32x32_sliced1x4_nt",
     8 * kUs,
     2.6,
     154,
     73728,
     {16, 16, 1},
     {128, 1, 1},
     4},
    // kBiasGrad
    {"void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, "
     "at::native::func_wrapper_t<float, at::native::sum_functor<c10::BFloat16, float, "
     "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
     "c10::BFloat16, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<c10::BFloat16, float, "
     "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
     "c10::BFloat16, 4>)",
     "void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, "
     "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
     "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> "
     ">(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<float, float, "
     "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
     20 * kUs,
     2.0,
     50,
     2064,
     {8, 64, 1},
     {32, 16, 1},
     44},
    // kMeanBwd
    {"void at::native::elementwise_kernel<128, 2, "
     "at::native::gpu_kernel_impl_nocast<at::native::BUnaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::DivFunctor<c10::BFloat16> > "
     ">(at::TensorIteratorBase&, at::native::BUnaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::DivFunctor<c10::BFloat16> > "
     "const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::BUnaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::DivFunctor<c10::BFloat16> > "
     ">(at::TensorIteratorBase&, at::native::BUnaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::DivFunctor<c10::BFloat16> > "
     "const&)::{lambda(int)#1})",
     "void at::native::elementwise_kernel<128, 2, "
     "at::native::gpu_kernel_impl_nocast<at::native::BUnaryFunctor<float, float, float, "
     "at::native::binary_internal::DivFunctor<float> > >(at::TensorIteratorBase&, "
     "at::native::BUnaryFunctor<float, float, float, "
     "at::native::binary_internal::DivFunctor<float> > const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::BUnaryFunctor<float, float, float, "
     "at::native::binary_internal::DivFunctor<float> > >(at::TensorIteratorBase&, "
     "at::native::BUnaryFunctor<float, float, float, "
     "at::native::binary_internal::DivFunctor<float> > const&)::{lambda(int)#1})",
     30 * kUs,
     2.0,
     26,
     0,
     {16384, 1, 1},
     {128, 1, 1},
     100},
    // kGemmDgrad (duration given per call: that of the forward gemm)
    {"sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
     "tensor16x8x16_kernel",
     "ampere_sgemm_128x64_nn",
     100 * kUs,
     2.6,
     230,
     81920,
     {8, 64, 1},
     {128, 1, 1},
     12},
    // kGemmWgrad (duration given per call)
    {"sm80_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x32_stage3_warpsize2x4x1_"
     "tensor16x8x16_kernel",
     "ampere_sgemm_128x128_nt",
     100 * kUs,
     2.6,
     232,
     147456,
     {4, 8, 1},
     {256, 1, 1},
     12},
    // kGeluBwd
    {"void at::native::vectorized_elementwise_kernel<4, "
     "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
     "const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, "
     "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
     "const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)",
     "void at::native::vectorized_elementwise_kernel<4, "
     "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
     "const::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, "
     "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
     "const::{lambda(float, float)#1}, at::detail::Array<char*, 3>)",
     130 * kUs,
     2.0,
     30,
     0,
     {32768, 1, 1},
     {128, 1, 1},
     100},
    // kLnBwdInput
    {"void at::native::(anonymous "
     "namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 "
     "const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, "
     "c10::BFloat16*, int)",
     "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, "
     "float>(float const*, float const*, float const*, float const*, float const*, float*, int)",
     42 * kUs,
     2.0,
     40,
     16,
     {8192, 1, 1},
     {128, 1, 1},
     75},
    // kLnBwdGammaBeta
    {"void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, "
     "float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
     "c10::BFloat16*, c10::BFloat16*)",
     "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<float, "
     "float>(long, long, float const*, float const*, float const*, float const*, float*, float*)",
     30 * kUs,
     2.0,
     48,
     8448,
     {32, 1, 1},
     {32, 32, 1},
     25},
    // kAttnBwdPre
    {"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, "
     "pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, "
     "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, "
     "cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params)",
     "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, "
     "1>)",
     22 * kUs,
     2.0,
     32,
     0,
     {8, 8, 16},
     {256, 1, 1},
     50},
    // kAttnBwdMain
    {"void "
     "pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_"
     "traits<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, "
     "pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> >, false, false, "
     "false, false, false, true, false>(pytorch_flash::Flash_bwd_params)",
     "fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
     "cutlass::arch::Sm80, float, true, false, true, 64, 64, 64, false>::Params)",
     440 * kUs,
     2.8,
     255,
     98304,
     {8, 8, 16},
     {256, 1, 1},
     12},
    // kAttnBwdPost (flash only)
    {"void pytorch_flash::flash_bwd_convert_dq_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, "
     "128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, "
     "pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > "
     ">(pytorch_flash::Flash_bwd_params, int)",
     nullptr,
     18 * kUs,
     1.0,
     64,
     32768,
     {8, 8, 16},
     {256, 1, 1},
     25},
    // kConvWgrad
    {"sm80_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_"
     "warpsize2x2x1_g1_tensor16x8x16_kernel",
     "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, int, "
     "float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, "
     "int, int, int, int)",
     75 * kUs,
     2.6,
     168,
     81920,
     {6, 8, 24},
     {256, 1, 1},
     12},
    // kAdamStepCount
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::TensorListMetadata<1>, at::native::(anonymous "
     "namespace)::UnaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, "
     "float>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous "
     "namespace)::UnaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float)",
     "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::TensorListMetadata<1>, at::native::(anonymous "
     "namespace)::UnaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, "
     "float>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous "
     "namespace)::UnaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float)",
     5 * kUs,
     1.0,
     32,
     0,
     {4, 1, 1},
     {512, 1, 1},
     2},
    // kFusedAdam (duration given per call: one chunk per block)
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous "
     "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, "
     "double, double, double, double, double, bool, float const*, float "
     "const*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, "
     "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
     "false>, double*, double, double, double, double, double, bool, float const*, float const*)",
     "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous "
     "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, "
     "double, double, double, double, double, bool, float const*, float "
     "const*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, "
     "at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
     "false>, double*, double, double, double, double, double, bool, float const*, float const*)",
     270 * kUs,
     1.0,
     72,
     0,
     {320, 1, 1},
     {512, 1, 1},
     50},
    // kNcclAllReduce (duration set by the bucket size and the planted exposure)
    {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
     "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     0,
     1.0,
     96,
     87568,
     {24, 1, 1},
     {544, 1, 1},
     0},
    // kTinyLoop: 16 blocks of 128 threads, fewer blocks than SMs (planted by tiny_grid_fraction;
    // duration given per call)
    {"void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
     "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, "
     "at::native::AUnaryFunctor<float, float, float, "
     "at::native::binary_internal::MulFunctor<float> "
     ">, at::detail::Array<char*, 2>)",
     "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
     "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, "
     "at::native::AUnaryFunctor<float, float, float, "
     "at::native::binary_internal::MulFunctor<float> "
     ">, at::detail::Array<char*, 2>)",
     4 * kUs,
     1.0,
     16,
     0,
     {16, 1, 1},
     {128, 1, 1},
     6},
};

struct DeviceProps {
  int major, minor, num_sms, smem_per_sm, smem_optin;
};

DeviceProps PropsFor(const std::string& name) {
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) {
    return {9, 0, 132, 233472, 232448};
  }
  if (name.find("V100") != std::string::npos) return {7, 0, 80, 98304, 98304};
  return {8, 0, 108, 167936, 166912};  // A100
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (AppendListedEscape(kJsonShortEscapes, byte, &out)) continue;
    if (byte < 0x20)
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(byte));
    else
      out += c;
  }
  return out;
}

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// ---------------------------------------------------------------------------------------------
// Buffered output: 1 MiB buffer flushed through fwrite or gzwrite (deflate level 1).

class Output {
 public:
  static constexpr size_t kCap = 1 << 20;

  Output() : buf_(new char[kCap]) {}
  ~Output() {
    if (file_ != nullptr) std::fclose(file_);
    if (gz_ != nullptr) gzclose(gz_);
  }

  Status Open(const std::string& path, bool gzip) {
    path_ = path;
    GPUSCOPE_TRY(out, OpenOutputFile(path, "-o"));
    if (gzip) {
      gz_ = gzdopen(out->fd, "wb1");
      if (gz_ == nullptr) return OpenError(out->fd);
      gzbuffer(gz_, 256 * 1024);
    } else {
      file_ = fdopen(out->fd, "wb");
      if (file_ == nullptr) return OpenError(out->fd);
    }
    return Status::Ok();
  }

  void Put(const char* s, size_t n) {
    if (pos_ + n > kCap) {
      Flush();
      if (n > kCap) {
        WriteRaw(s, n);
        return;
      }
    }
    std::memcpy(buf_.get() + pos_, s, n);
    pos_ += n;
  }
  void Put(std::string_view s) { Put(s.data(), s.size()); }
  template <size_t N>
  void Lit(const char (&s)[N]) {
    Put(s, N - 1);
  }
  void Int(int64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
    Put(tmp, static_cast<size_t>(r.ptr - tmp));
  }
  // A time or duration given in ns, printed in µs: "123.456" (3 decimals, exact) or "123".
  void Micros(int64_t ns, bool integer) {
    char tmp[32];
    char* p = tmp;
    if (ns < 0) {
      *p++ = '-';
      ns = -ns;
    }
    p = std::to_chars(p, tmp + sizeof(tmp), ns / 1000).ptr;
    if (!integer) {
      int64_t frac = ns % 1000;
      p[0] = '.';
      p[1] = static_cast<char>('0' + frac / 100);
      p[2] = static_cast<char>('0' + frac / 10 % 10);
      p[3] = static_cast<char>('0' + frac % 10);
      p += 4;
    }
    Put(tmp, static_cast<size_t>(p - tmp));
  }
  void Double(double v) {
    char tmp[40];
    auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
    Put(tmp, static_cast<size_t>(r.ptr - tmp));
  }

  uint64_t bytes() const { return written_ + pos_; }

  Status Close() {
    Flush();
    if (file_ != nullptr) {
      if (std::fclose(file_) != 0 && error_.empty()) error_ = std::strerror(errno);
      file_ = nullptr;
    }
    if (gz_ != nullptr) {
      int rc = gzclose(gz_);
      gz_ = nullptr;
      if (rc != Z_OK && error_.empty())
        error_ = "gzclose failed (zlib code " + std::to_string(rc) + ")";
    }
    if (!error_.empty()) {
      return Status::Error(StatusCode::kIoError, path_ + ": cannot write trace: " + error_);
    }
    return Status::Ok();
  }

 private:
  Status OpenError(int fd) {
    const int e = errno;
    close(fd);
    return Status::Error(StatusCode::kIoError,
                         path_ + ": cannot open for writing: " + std::strerror(e));
  }
  void Flush() {
    if (pos_ == 0) return;
    WriteRaw(buf_.get(), pos_);
    pos_ = 0;
  }
  void WriteRaw(const char* s, size_t n) {
    written_ += n;
    if (!error_.empty()) return;  // keep counting, stop writing after the first failure
    if (file_ != nullptr) {
      if (std::fwrite(s, 1, n, file_) != n) error_ = std::strerror(errno);
    } else if (gz_ != nullptr) {
      while (n > 0) {
        unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
        if (gzwrite(gz_, s, chunk) != static_cast<int>(chunk)) {
          int zerr = 0;
          const char* msg = gzerror(gz_, &zerr);
          error_ =
              zerr == Z_ERRNO ? std::strerror(errno) : (msg != nullptr ? msg : "gzwrite failed");
          return;
        }
        s += chunk;
        n -= chunk;
      }
    }
  }

  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0;
  uint64_t written_ = 0;
  std::string path_;
  std::string error_;
  FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// One step's records, in the step's own time frame.

enum class Kind : uint8_t { kCpuOp, kAnnotation, kRuntime, kKernel, kMemcpy, kMemset, kMemory };

struct Rec {
  Kind kind;
  bool has_gpu = false;  // runtime call with a GPU activity: gets the ac2g flow start
  bool comm = false;     // record_param_comms / NCCL kernel: collective args (a = nelems)
  int16_t kernel = -1;
  int32_t cbid = 0;
  const char* name = nullptr;
  int64_t start = 0;
  int64_t end = 0;
  int64_t ext = 0;
  int64_t corr = 0;
  // Kind-specific: memcpy/memset a = bytes; [memory] a = delta, b = addr, c = allocated,
  // d = reserved; ProfilerStep a = step number; comm a = nelems, b = Seq (coupled ranks).
  int64_t a = 0, b = 0, c = 0, d = 0;
};

struct NcclLaunch {
  size_t rec;
  int64_t ready;    // earliest start allowed by the launch call
  int64_t event;    // compute-stream point the NCCL stream waits for (cudaStreamWaitEvent)
  int64_t natural;  // ring all-reduce time of the bucket (the final one is stretched instead)
  int64_t qgap;
};

struct Deferred {  // stream-7 work queued behind the wait on the final all-reduce
  size_t rec;
  int64_t ready;
  int64_t dur;
  int64_t qgap;
};

struct Interval {
  int64_t start, end;
};

struct SyncMark {        // one .item() sync point (step frame, before any planted stall)
  int64_t after;         // CPU time its aten::item ends: the stall starts here
  int64_t call_end;      // end of its cudaStreamSynchronize
  int64_t call_end_now;  // the same after the stalls of the earlier points (SolveSyncStall)
};

// Ranks wait for each other at collectives (SynthOptions::coupled_collectives and what implies it).
bool Coupled(const SynthOptions& o) {
  return o.coupled_collectives || o.late_rank >= 0 || o.clock_offset_max_ns > 0 ||
         o.clock_noise_ns > 0;
}

// Coupled ranks: the one rank generated differently from the others (the late rank, else the
// straggler), or -1.
int SpecialRank(const SynthOptions& o) {
  if (!Coupled(o)) return -1;
  return o.late_rank >= 0 ? o.late_rank : o.straggler_rank;
}

// The seed of run `run` of a folder (run 0: the options' own seed, so one run is unchanged).
uint64_t RunSeed(uint64_t seed, int run) {
  return run == 0 ? seed : Mix64(seed ^ (0x72756e0000ULL + static_cast<uint64_t>(run)));
}

class RankGenerator {
 public:
  // Coupled ranks are replicas: every rank draws the same random numbers (those of rank 0), so the
  // ranks differ only by what is planted (late rank, jitter, clocks, pid, device).
  RankGenerator(const SynthOptions& o, int run, int rank)
      : o_(o),
        rank_(rank),
        run_(run),
        seed_(RunSeed(o.seed, run)),
        coupled_(Coupled(o)),
        special_rank_(SpecialRank(o)),
        bf16_(o.precision == SynthPrecision::kBf16),
        q_(o.integer_timestamps ? kUs : 1),
        cpu_rng_(Mix64(seed_) ^ Mix64(0x100 + static_cast<uint64_t>(coupled_ ? 0 : rank))),
        gpu_common_(Mix64(seed_) ^ 0x5eed0f6a11ULL),
        gpu_rank_(Mix64(seed_) ^ Mix64(0x200 + static_cast<uint64_t>(coupled_ ? 0 : rank))),
        props_(PropsFor(o.device_name)) {}

  // `shadow`: with coupled ranks and a special rank, a generator of the other kind (the special
  // rank when this one is on time, an on-time rank when this one is special), stepped alongside
  // without output, so that this rank knows when the others arrive at every collective.
  Result<SynthTruth> Run(const std::string& path, RankGenerator* shadow) {
    Status st = out_.Open(path, o_.gzip);
    if (!st.ok()) return st;
    Setup();
    if (shadow != nullptr) shadow->Setup();
    WriteHeader();
    int steps_done = 0;
    while (true) {
      const int step_number = first_step_number_ + steps_done;
      StepBegin(step_number);
      if (shadow != nullptr) shadow->StepBegin(step_number);
      if (coupled_) CoupleCollectives(shadow);
      StepEnd(/*write=*/true);
      if (shadow != nullptr) shadow->StepEnd(/*write=*/false);
      ++steps_done;
      if (o_.target_bytes > 0 ? out_.bytes() >= o_.target_bytes : steps_done >= o_.steps) break;
    }
    WriteFooter();
    st = out_.Close();
    if (!st.ok()) return st;
    truth_.rank = rank_;
    truth_.run = run_;
    truth_.steps = steps_done;
    if (coupled_) {
      truth_.late = rank_ == special_rank_;
      truth_.clock_offset_ns = clock_offset_;
      truth_.collectives = truth_.nccl_kernels;
      truth_.wait_caused_ns_per_step = sum_wait_caused_ / steps_done;
      truth_.wait_suffered_ns_per_step = sum_wait_suffered_ / steps_done;
    }
    truth_.bytes_written = out_.bytes();
    truth_.step_ns = sum_period_ / steps_done;
    truth_.dataloader_wait_ns_per_step = sum_wait_ / steps_done;
    truth_.exposed_comm_ns_per_step = sum_exposed_ / steps_done;
    truth_.sync_stall_ns_per_step = sum_sync_stall_ / steps_done;
    truth_.host_gap_ns_per_step = sum_host_gap_ / steps_done;
    truth_.tiny_grid_share = sum_compute_ns_ > 0 ? static_cast<double>(sum_tiny_ns_) /
                                                       static_cast<double>(sum_compute_ns_)
                                                 : 0.0;
    return truth_;
  }

 private:
  // ----- setup -----------------------------------------------------------------------------
  void Setup() {
    const uint64_t job = Mix64(seed_ ^ 0x6a6f62ULL);
    pid_ = 100000 + static_cast<int64_t>(Mix64(job + 1 + static_cast<uint64_t>(rank_)) % 3900000);
    tid_ = pid_;  // everything runs on the main thread (pt_main_thread)
    device_ = rank_ % 8;
    world_ = o_.ranks;
    es_ = bf16_ ? 2 : 4;
    first_step_number_ = 2 + static_cast<int>(job % 8);
    straggler_ = rank_ == o_.straggler_rank;
    late_ = coupled_ && rank_ == o_.late_rank;

    // Absolute clock: the job starts at a seeded instant between 2023-11 and 2025-11; each rank's
    // profiler starts up to 3 ms later. Newer Kineto writes ts relative to baseTimeNanoseconds
    // (unix ns = base + ts*1000), and the base is a whole second well before the events (the
    // shared traces have ts ~4.4e12 µs, i.e. ~50 days); each rank has its own base.
    int64_t job_start = 1700000000 * kSec + static_cast<int64_t>(job % (730ULL * 86400ULL)) * kSec +
                        static_cast<int64_t>(Mix64(job) % static_cast<uint64_t>(kSec));
    // Run j of a folder starts j hours after run 0 (the job start is drawn from run 0's seed).
    if (run_ > 0) {
      const uint64_t job0 = Mix64(o_.seed ^ 0x6a6f62ULL);
      job_start = 1700000000 * kSec + static_cast<int64_t>(job0 % (730ULL * 86400ULL)) * kSec +
                  static_cast<int64_t>(Mix64(job0) % static_cast<uint64_t>(kSec)) +
                  static_cast<int64_t>(run_) * 3600 * kSec;
    }
    trace_start_ = job_start + cpu_rng_.Between(0, 3 * kMs);
    trace_start_ = trace_start_ / q_ * q_;
    profiler_start_ = trace_start_;
    if (coupled_) {
      // Replicas share the timeline; each rank's profiler started up to 3 ms before its first step.
      const uint64_t h = Mix64(job ^ 0x70726f66ULL ^ Mix64(static_cast<uint64_t>(rank_)));
      profiler_start_ = (trace_start_ - static_cast<int64_t>(h % (3 * kMs))) / q_ * q_;
      if (o_.clock_offset_max_ns > 0) {
        const uint64_t span = static_cast<uint64_t>(o_.clock_offset_max_ns / q_) * 2 + 1;
        const uint64_t c = Mix64(job ^ 0xc10c0ffULL ^ Mix64(static_cast<uint64_t>(rank_)));
        clock_offset_ = (static_cast<int64_t>(c % span) - o_.clock_offset_max_ns / q_) * q_;
      }
      seq_next_ = 1000 + static_cast<int64_t>(job % 1000);
    }
    if (o_.integer_timestamps) {
      emit_base_ = false;
      print_base_ = 0;  // 2021 style: absolute epoch µs, no baseTimeNanoseconds
    } else {
      emit_base_ = true;
      // 20-60 days, in whole seconds.
      int64_t secs =
          20 * 86400 +
          static_cast<int64_t>(Mix64(job + 77 + static_cast<uint64_t>(rank_)) % (40 * 86400));
      print_base_ = (trace_start_ - secs * kSec) / kSec * kSec;
    }
    s_next_ = trace_start_ + Cpu(1 * kMs, 3 * kMs);
    jitter_quanta_ = o_.arrival_jitter_ns / q_;
    g_done_prev_ = s_next_ + kCpuLeadNs;  // virtual end of the (unprofiled) previous step
    corr_id_ = 1000 + static_cast<int64_t>(job % 5000);
    ext_id_ = 0;

    // Kernel table for this precision: JSON-ready names and the static part of the args.
    kernels_.resize(kNumKernels);
    for (int k = 0; k < kNumKernels; ++k) {
      const KernelDef& d = kKernelDefs[k];
      const char* name = bf16_ ? d.bf16_name : d.fp32_name;
      KernelInfo& info = kernels_[static_cast<size_t>(k)];
      info.present = name != nullptr;
      if (!info.present) continue;
      info.name = JsonEscape(name);
      info.base_ns = d.bf16_ns;
      info.factor = bf16_ ? 1.0 : d.fp32_factor;
      info.slow = !o_.slow_kernel.empty() &&
                  std::string_view(name).find(o_.slow_kernel) != std::string_view::npos;
      double blocks = static_cast<double>(d.grid[0]) * d.grid[1] * d.grid[2];
      double blocks_per_sm = blocks / props_.num_sms;
      info.tiny = blocks_per_sm < 1.0;
      int threads = d.block[0] * d.block[1] * d.block[2];
      double warps_per_sm = blocks_per_sm * ((threads + 31) / 32);
      info.static_args = fmt::format(
          ",      \"registers per thread\": {},      \"shared memory\": {},      \"blocks per "
          "SM\": {:.6f},      \"warps per SM\": {:.6f},      \"grid\": [{}, {}, {}],      "
          "\"block\": [{}, {}, {}],      \"est. achieved occupancy %\": {}",
          d.regs, d.smem, blocks_per_sm, warps_per_sm, d.grid[0], d.grid[1], d.grid[2], d.block[0],
          d.block[1], d.block[2], d.occupancy);
    }

    // Collective args shared by record_param_comms and the NCCL kernels.
    std::string ranks = "[";
    for (int r = 0; r < world_; ++r) {
      if (r > 0) ranks += ", ";
      ranks += std::to_string(r);
    }
    ranks += "]";
    pg_ranks_ = ranks;
    comm_tail_ = std::string(", \"Group size\": ") + std::to_string(world_) + ", \"dtype\": \"" +
                 (bf16_ ? "BFloat16" : "Float") +
                 "\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group "
                 "Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group "
                 "Ranks\": \"" +
                 ranks + "\"";

    // Bus bandwidth of this rank's ring (GB/s == bytes/ns), fixed for the run.
    bus_bw_ = 100.0 * gpu_rank_.Jitter(0.05);

    // DDP buckets in backward order: ceil(L/4) blocks each; the last one (with block 0 and the
    // stem) is launched inside block 0's backward.
    layers_per_bucket_ = (o_.layers + 3) / 4;
    // .item() syncs: sync j goes before op group p_j = floor((j+1)*2L/(n+1)); groups 0..L-1 are
    // the forward blocks, L is the head backward (just after the loss), L+1..2L-1 the backward of
    // blocks L-2..0.
    // A sync stall needs a sync to follow: with none requested, one per step.
    const int syncs = o_.sync_stall_fraction > 0.0 ? std::max(1, o_.sync_points_per_step)
                                                   : o_.sync_points_per_step;
    sync_before_.assign(static_cast<size_t>(2 * o_.layers + 1), 0);
    for (int j = 0; j < syncs; ++j) {
      int64_t p = static_cast<int64_t>(j + 1) * 2 * o_.layers / (syncs + 1);
      ++sync_before_[static_cast<size_t>(p)];
    }
    live_.assign(static_cast<size_t>(o_.layers + 1), {});

    // Allocator baseline: fp32 params + grads + 2 Adam moments.
    int64_t params = kLayerParams * o_.layers + kStemParams + kHeadParams;
    allocated_ = RoundUp(params * 4, 512) * 4;
    reserved_ = RoundUp(allocated_, 20 * kMiB) + 20 * kMiB;
    addr_base_ = 0x7f0000000000LL + static_cast<int64_t>(job % 4096) * 2 * kMiB +
                 RoundUp(allocated_, 2 * kMiB);
  }

  struct KernelInfo {
    bool present = false;
    bool tiny = false;  // fewer blocks than SMs
    std::string name;
    std::string static_args;
    int64_t base_ns = 0;
    double factor = 1.0;
    bool slow = false;  // matches SynthOptions::slow_kernel
  };

  // ----- small helpers ---------------------------------------------------------------------
  int64_t Quant(int64_t ns) const {
    if (q_ == 1) return std::max<int64_t>(ns, 1);
    return std::max<int64_t>((ns + q_ / 2) / q_ * q_, q_);
  }
  int64_t Cpu(int64_t lo, int64_t hi) { return Quant(cpu_rng_.Between(lo, hi)); }
  void Gap() { cpu_ += Cpu(3 * kUs, 14 * kUs); }  // Python between top-level ops
  int64_t QGap() { return Cpu(1000, 2600); }      // GPU front end between queued ops

  int64_t GpuDur(KernelId k, int64_t base_ns) {
    const KernelInfo& info = kernels_[k];
    double d = static_cast<double>(base_ns) * info.factor;
    d *= gpu_common_.Jitter(0.04) * gpu_rank_.Jitter(0.006);
    if (straggler_ && k != kNcclAllReduce) d *= o_.straggler_slowdown;
    if (info.slow) d *= o_.slow_kernel_factor;
    // The planted late rank: its stem convolution (the step's first compute) runs late_ns longer,
    // which delays everything after it on the compute stream, and so its arrival at every
    // collective of the step.
    if (late_ && k == kConvFprop) d += static_cast<double>(o_.late_ns);
    return Quant(std::llround(d));
  }

  size_t Add(Kind kind, const char* name) {
    recs_.push_back(Rec{});
    Rec& r = recs_.back();
    r.kind = kind;
    r.name = name;
    return recs_.size() - 1;
  }

  // A cpu_op or user_annotation around `body`. Runtime calls carry the External id of the
  // innermost cpu_op (as Kineto does), so annotations do not change it.
  template <typename F>
  void Op(Kind kind, const char* name, F&& body) {
    size_t idx = Add(kind, name);
    int64_t ext = ++ext_id_;
    recs_[idx].ext = ext;
    recs_[idx].start = cpu_;
    int64_t saved = cur_ext_;
    if (kind == Kind::kCpuOp) cur_ext_ = ext;
    cpu_ += Cpu(1200, 3500);
    body();
    cpu_ += Cpu(600, 2000);
    recs_[idx].end = cpu_;
    cur_ext_ = saved;
  }
  template <typename F>
  void CpuOp(const char* name, F&& body) {
    Op(Kind::kCpuOp, name, std::forward<F>(body));
  }
  void Leaf(const char* name) {
    CpuOp(name, [] {});
  }
  void Transpose() {
    CpuOp("aten::t", [&] { CpuOp("aten::transpose", [&] { Leaf("aten::as_strided"); }); });
  }
  template <typename F>
  void EvalFn(const char* outer, const char* inner, F&& body) {
    Gap();
    CpuOp(outer, [&] { CpuOp(inner, body); });
  }

  size_t Runtime(const char* name, int cbid, int64_t start, int64_t end, bool has_gpu) {
    size_t idx = Add(Kind::kRuntime, name);
    Rec& r = recs_[idx];
    r.cbid = cbid;
    r.start = start;
    r.end = end;
    r.ext = cur_ext_;
    r.corr = ++corr_id_;
    r.has_gpu = has_gpu;
    return idx;
  }
  void RuntimeOnly(const char* name, int cbid, int64_t lo, int64_t hi) {
    int64_t t = cpu_;
    cpu_ += Cpu(lo, hi);
    Runtime(name, cbid, t, cpu_, false);
  }
  size_t GpuRec(Kind kind, const char* name, size_t runtime_rec) {
    size_t idx = Add(kind, name);
    recs_[idx].ext = recs_[runtime_rec].ext;
    recs_[idx].corr = recs_[runtime_rec].corr;
    return idx;
  }

  // Queues work on stream 7: in order, after the previous op and a queue gap.
  void Schedule7(size_t g, int64_t ready, int64_t dur, bool compute) {
    int64_t qgap = QGap();
    if (blocked_on_nccl_) {
      deferred_.push_back({g, ready, dur, qgap});
      return;
    }
    int64_t start = std::max(ready, tail7_ + qgap);
    recs_[g].start = start;
    recs_[g].end = start + dur;
    tail7_ = start + dur;
    if (compute) compute_.push_back({start, start + dur});
  }

  void Launch(KernelId k, int64_t base_ns = -1) {
    const KernelInfo& info = kernels_[k];
    if (!info.present) return;
    int64_t dur = GpuDur(k, base_ns >= 0 ? base_ns : info.base_ns);
    if (k != kNcclAllReduce) {  // compute kernels, for the tiny-grid truth
      step_compute_ns_ += dur;
      if (info.tiny) step_tiny_ns_ += dur;
    }
    int64_t t = cpu_;
    // cudaLaunchKernel takes 3.5-7 µs, with rare 12-40 µs outliers (driver lock contention).
    int64_t call = cpu_rng_.Unit() < 0.02 ? Cpu(12 * kUs, 40 * kUs) : Cpu(3500, 7000);
    size_t rt = Runtime("cudaLaunchKernel", 211, t, t + call, true);
    size_t g = GpuRec(Kind::kKernel, nullptr, rt);
    recs_[g].kernel = k;
    Schedule7(g, t + call + Cpu(500, 3000), dur, true);
    cpu_ = t + call;
  }

  void Memset(int64_t bytes) {
    int64_t t = cpu_;
    int64_t call = Cpu(3500, 7000);
    size_t rt = Runtime("cudaMemsetAsync", 51, t, t + call, true);
    size_t g = GpuRec(Kind::kMemset, "Memset (Device)", rt);
    recs_[g].a = bytes;
    Schedule7(g, t + call + Cpu(500, 2000), Cpu(1200, 2600), false);
    cpu_ = t + call;
  }

  // H2D copy of `bytes` from pinned memory (async) or pageable memory (the call returns only
  // after the copy has landed, through the driver's staging buffer).
  void MemcpyH2D(int64_t bytes) {
    const bool pageable = o_.pageable_copies;
    double gbps = (pageable ? 6.5 : 23.0) * gpu_rank_.Jitter(0.06);  // PCIe Gen4 x16
    int64_t dur = Quant(Cpu(900, 1600) + static_cast<int64_t>(static_cast<double>(bytes) / gbps));
    int64_t t = cpu_;
    size_t rt = Runtime("cudaMemcpyAsync", 41, t, t, true);
    size_t g = GpuRec(
        Kind::kMemcpy,
        pageable ? "Memcpy HtoD (Pageable -> Device)" : "Memcpy HtoD (Pinned -> Device)", rt);
    recs_[g].a = bytes;
    if (pageable) {
      Schedule7(g, t + Cpu(3 * kUs, 6 * kUs), dur, false);
      recs_[rt].end = recs_[g].end + Cpu(2 * kUs, 6 * kUs);
    } else {
      int64_t call = Cpu(6 * kUs, 12 * kUs);
      recs_[rt].end = t + call;
      Schedule7(g, t + call + Cpu(500, 2000), dur, false);
    }
    if (first_copy_start_ == kNegInf) first_copy_start_ = recs_[g].start;
    cpu_ = recs_[rt].end;
  }

  // tensor.item(): a blocking 4-byte DtoH copy behind everything queued on stream 7, then
  // cudaStreamSynchronize (already drained, so short).
  void SyncPoint() {
    Gap();
    int64_t sync_call_end = 0;
    CpuOp("aten::item", [&] {
      CpuOp("aten::_local_scalar_dense", [&] {
        int64_t t = cpu_;
        size_t rt = Runtime("cudaMemcpyAsync", 41, t, t, true);
        size_t g = GpuRec(Kind::kMemcpy, "Memcpy DtoH (Device -> Pageable)", rt);
        recs_[g].a = 4;
        Schedule7(g, t + Cpu(2 * kUs, 5 * kUs), Cpu(1300, 2400), false);
        recs_[rt].end = recs_[g].end + Cpu(2 * kUs, 6 * kUs);
        cpu_ = recs_[rt].end;
        RuntimeOnly("cudaStreamSynchronize", 131, 1500, 4000);
        sync_call_end = cpu_;
      });
    });
    // The planted stall (if any) follows here: Python uses the value, no event (see SimulateStep).
    sync_marks_.push_back({cpu_, sync_call_end, sync_call_end});
  }

  void Syncs(int group) {
    for (int i = 0; i < sync_before_[static_cast<size_t>(group)]; ++i) SyncPoint();
  }

  // ----- allocator ([memory] events) ----------------------------------------------------------
  void MemRec(int64_t delta, int64_t addr) {
    size_t idx = Add(Kind::kMemory, "[memory]");
    Rec& r = recs_[idx];
    r.start = cpu_;
    r.a = delta;
    r.b = addr;
    r.c = allocated_;
    r.d = reserved_;
    cpu_ += Cpu(200, 900);
  }
  void Alloc(int slot, int64_t bytes) {
    bytes = RoundUp(bytes, 512);  // the caching allocator's block size
    int64_t addr = addr_base_ + addr_cursor_;
    addr_cursor_ += bytes;
    allocated_ += bytes;
    if (allocated_ > reserved_) reserved_ = RoundUp(allocated_, 20 * kMiB) + 20 * kMiB;
    live_[static_cast<size_t>(slot)].push_back({addr, bytes});
    MemRec(bytes, addr);
  }
  void FreeSlot(int slot) {
    auto& blocks = live_[static_cast<size_t>(slot)];
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
      allocated_ -= it->second;
      MemRec(-it->second, it->first);
    }
    blocks.clear();
  }

  // ----- the model ----------------------------------------------------------------------------
  int StepSlot() const { return o_.layers; }
  int64_t Act(int64_t width) const { return kTokens * width * es_; }  // activation bytes

  void CopyToDevice(int64_t bytes) {
    Gap();
    CpuOp("aten::to", [&] {
      CpuOp("aten::_to_copy", [&] {
        CpuOp("aten::empty_strided", [&] { Alloc(StepSlot(), bytes); });
        CpuOp("aten::copy_", [&] { MemcpyH2D(bytes); });
      });
    });
  }

  void Linear(KernelId k, int slot, int64_t out_bytes) {
    Gap();
    CpuOp("aten::linear", [&] {
      Transpose();
      CpuOp("aten::addmm", [&] {
        Alloc(slot, out_bytes);
        Launch(k);
      });
    });
  }

  void LayerNorm(int slot) {
    Gap();
    CpuOp("aten::layer_norm", [&] {
      CpuOp("aten::native_layer_norm", [&] {
        Alloc(slot, Act(kHidden));
        Alloc(slot, 2 * kTokens * 4);  // mean, rstd
        Launch(kLnFwd);
      });
    });
  }

  void Elementwise(const char* name, KernelId k, int slot, int64_t out_bytes) {
    Gap();
    CpuOp(name, [&] {
      Alloc(slot, out_bytes);
      Launch(k);
    });
  }

  void Stem() {
    int slot = StepSlot();
    Gap();
    CpuOp("aten::conv2d", [&] {
      if (bf16_) {  // autocast casts the fp32 images to bf16 first
        CpuOp("aten::to", [&] {
          CpuOp("aten::_to_copy", [&] {
            CpuOp("aten::empty_strided", [&] { Alloc(slot, kInputBytes / 2); });
            CpuOp("aten::copy_", [&] { Launch(kCastInput); });
          });
        });
      }
      CpuOp("aten::convolution", [&] {
        CpuOp("aten::_convolution", [&] {
          CpuOp("aten::cudnn_convolution", [&] {
            Alloc(slot, Act(kHidden));
            Launch(kConvLayoutIn);
            Launch(kConvFprop);
            Launch(kConvLayoutOut);
          });
        });
      });
    });
    Gap();
    CpuOp("aten::flatten", [&] { Leaf("aten::view"); });
    Gap();
    CpuOp("aten::transpose", [&] { Leaf("aten::as_strided"); });
  }

  void ForwardBlock(int l) {
    LayerNorm(l);
    Linear(kGemmQkv, l, Act(3 * kHidden));
    Gap();
    CpuOp("aten::scaled_dot_product_attention", [&] {
      CpuOp(bf16_ ? "aten::_scaled_dot_product_flash_attention"
                  : "aten::_scaled_dot_product_efficient_attention",
            [&] {
              CpuOp(bf16_ ? "aten::_flash_attention_forward" : "aten::_efficient_attention_forward",
                    [&] {
                      Alloc(l, Act(kHidden));
                      Alloc(l, kBatch * 16 * 1024 * 4);  // logsumexp
                      Launch(kAttnFwd);
                    });
            });
    });
    Linear(kGemmProj, l, Act(kHidden));
    Elementwise("aten::add", kAddKernel, l, Act(kHidden));
    LayerNorm(l);
    Linear(kGemmFc1, l, Act(4 * kHidden));
    Elementwise("aten::gelu", kGelu, l, Act(4 * kHidden));
    Linear(kGemmFc2, l, Act(kHidden));
    Elementwise("aten::add", kAddKernel, l, Act(kHidden));
  }

  void HeadForward() {
    int slot = StepSlot();
    Elementwise("aten::mean", kMeanPool, slot, kBatch * kHidden * es_);
    Linear(kGemmHead, slot, kBatch * kClasses * es_);
    Gap();
    CpuOp("aten::cross_entropy_loss", [&] {
      CpuOp("aten::log_softmax", [&] {
        CpuOp("aten::_log_softmax", [&] {
          Alloc(slot, kBatch * kClasses * 4);
          Launch(kLogSoftmaxFwd);
        });
      });
      CpuOp("aten::nll_loss_nd", [&] {
        CpuOp("aten::nll_loss", [&] {
          CpuOp("aten::nll_loss_forward", [&] {
            Alloc(slot, 512);
            Launch(kNllFwd);
          });
        });
      });
    });
  }

  void LinearBackward(KernelId fwd, KernelId dgrad, KernelId wgrad, int slot, int64_t in_bytes,
                      int64_t bias_ns) {
    int64_t base = kernels_[fwd].base_ns;
    EvalFn("autograd::engine::evaluate_function: AddmmBackward0", "AddmmBackward0", [&] {
      Transpose();
      CpuOp("aten::mm", [&] {
        Alloc(slot, in_bytes);
        Launch(dgrad, dgrad == kGemmDgrad ? base : -1);
      });
      Transpose();
      CpuOp("aten::mm", [&] { Launch(wgrad, wgrad == kGemmWgrad ? base * 21 / 20 : -1); });
      CpuOp("aten::sum", [&] { Launch(kBiasGrad, bias_ns); });
    });
  }

  void LayerNormBackward(int slot) {
    EvalFn("autograd::engine::evaluate_function: NativeLayerNormBackward0",
           "NativeLayerNormBackward0", [&] {
             CpuOp("aten::native_layer_norm_backward", [&] {
               Alloc(slot, Act(kHidden));
               Memset(2 * kHidden * 4);  // zero the gamma/beta partial sums
               Launch(kLnBwdInput);
               Launch(kLnBwdGammaBeta);
             });
           });
  }

  void GradAccumulate(int slot, bool free_slot) {
    Gap();
    CpuOp("aten::add", [&] {
      Launch(kAddKernel);
      if (free_slot) FreeSlot(slot);  // the block's activations and grads die here
    });
  }

  void AddBackward() {
    EvalFn("autograd::engine::evaluate_function: AddBackward0", "AddBackward0", [] {});
  }

  void HeadBackward() {
    int slot = StepSlot();
    EvalFn("autograd::engine::evaluate_function: NllLossBackward0", "NllLossBackward0", [&] {
      CpuOp("aten::nll_loss_backward", [&] {
        Alloc(slot, kBatch * kClasses * 4);
        Memset(kBatch * kClasses * 4);  // grad_input.zero_()
        Launch(kNllBwd);
      });
    });
    EvalFn("autograd::engine::evaluate_function: LogSoftmaxBackward0", "LogSoftmaxBackward0", [&] {
      CpuOp("aten::_log_softmax_backward_data", [&] {
        Alloc(slot, kBatch * kClasses * 4);
        Launch(kLogSoftmaxBwd);
      });
    });
    LinearBackward(kGemmHead, kGemmHeadDgrad, kGemmHeadWgrad, slot, kBatch * kHidden * es_,
                   6 * kUs);
    EvalFn("autograd::engine::evaluate_function: MeanBackward1", "MeanBackward1", [&] {
      CpuOp("aten::expand", [&] { Leaf("aten::as_strided"); });
      CpuOp("aten::div", [&] {
        Alloc(slot, Act(kHidden));
        Launch(kMeanBwd);
      });
    });
  }

  void AllReduce(int64_t nelems, bool final) {
    Gap();
    CpuOp("c10d::allreduce_", [&] {
      size_t rpc = Add(Kind::kCpuOp, "record_param_comms");
      int64_t ext = ++ext_id_;
      recs_[rpc].ext = ext;
      recs_[rpc].start = cpu_;
      recs_[rpc].comm = true;
      recs_[rpc].a = nelems;
      const int64_t seq = seq_next_++;
      recs_[rpc].b = seq;
      int64_t saved = cur_ext_;
      cur_ext_ = ext;
      cpu_ += Cpu(2 * kUs, 6 * kUs);
      // The NCCL stream waits for the compute stream as it is now (the bucket's grads).
      int64_t event = tail7_;
      RuntimeOnly("cudaEventRecord", 135, 1500, 4000);
      RuntimeOnly("cudaStreamWaitEvent", 147, 1500, 3500);
      Op(Kind::kAnnotation, "nccl:all_reduce", [&] {
        int64_t t = cpu_;
        int64_t call = Cpu(8 * kUs, 20 * kUs);
        size_t rt = Runtime("cudaLaunchKernel", 211, t, t + call, true);
        size_t g = GpuRec(Kind::kKernel, nullptr, rt);
        recs_[g].kernel = kNcclAllReduce;
        recs_[g].comm = true;
        recs_[g].a = nelems;
        recs_[g].b = seq;
        double bytes = static_cast<double>(nelems) * static_cast<double>(es_);
        double ring = 2.0 * (world_ - 1) / world_ * bytes / bus_bw_;  // ns
        int64_t natural = GpuDur(kNcclAllReduce, 12 * kUs + static_cast<int64_t>(ring));
        nccl_.push_back({g, t + call + Cpu(1 * kUs, 4 * kUs), event, natural, QGap()});
        if (final) final_nccl_ = nccl_.size() - 1;
        cpu_ = t + call;
      });
      RuntimeOnly("cudaEventRecord", 135, 1000, 3000);
      cpu_ += Cpu(1 * kUs, 4 * kUs);
      recs_[rpc].end = cpu_;
      cur_ext_ = saved;
    });
  }

  void BackwardBlock(int l) {
    const bool last = l == 0;
    AddBackward();
    LinearBackward(kGemmFc2, kGemmDgrad, kGemmWgrad, l, Act(4 * kHidden), 20 * kUs);
    EvalFn("autograd::engine::evaluate_function: GeluBackward0", "GeluBackward0", [&] {
      CpuOp("aten::gelu_backward", [&] {
        Alloc(l, Act(4 * kHidden));
        Launch(kGeluBwd);
      });
    });
    LinearBackward(kGemmFc1, kGemmDgrad, kGemmWgrad, l, Act(kHidden), 60 * kUs);
    if (last) {
      // DDP's last bucket (the remaining blocks and the stem) is ready here; its all-reduce runs
      // beside the rest of backward and its tail is the planted exposed communication.
      int blocks = o_.layers - (o_.layers - 1) / layers_per_bucket_ * layers_per_bucket_;
      AllReduce(kLayerParams * blocks + kStemParams, true);
    }
    LayerNormBackward(l);
    GradAccumulate(l, false);
    AddBackward();
    LinearBackward(kGemmProj, kGemmDgrad, kGemmWgrad, l, Act(kHidden), 20 * kUs);
    const bool flash = bf16_;
    EvalFn(flash
               ? "autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0"
               : "autograd::engine::evaluate_function: ScaledDotProductEfficientAttentionBackward0",
           flash ? "ScaledDotProductFlashAttentionBackward0"
                 : "ScaledDotProductEfficientAttentionBackward0",
           [&] {
             CpuOp(flash ? "aten::_scaled_dot_product_flash_attention_backward"
                         : "aten::_scaled_dot_product_efficient_attention_backward",
                   [&] {
                     CpuOp(flash ? "aten::_flash_attention_backward"
                                 : "aten::_efficient_attention_backward",
                           [&] {
                             Alloc(l, Act(3 * kHidden));
                             Launch(kAttnBwdPre);
                             Launch(kAttnBwdMain);
                             Launch(kAttnBwdPost);
                           });
                   });
           });
    LinearBackward(kGemmQkv, kGemmDgrad, kGemmWgrad, l, Act(kHidden), 40 * kUs);
    LayerNormBackward(l);
    GradAccumulate(l, true);
    // Buckets fill in backward order; a full non-final bucket is all-reduced right away.
    int done = o_.layers - l;  // blocks whose backward has been issued
    if (!last && done % layers_per_bucket_ == 0) {
      int64_t nelems =
          kLayerParams * layers_per_bucket_ + (done == layers_per_bucket_ ? kHeadParams : 0);
      AllReduce(nelems, false);
    }
  }

  void StemBackward() {
    EvalFn("autograd::engine::evaluate_function: ConvolutionBackward0", "ConvolutionBackward0",
           [&] {
             CpuOp("aten::convolution_backward", [&] {
               Launch(kConvLayoutIn);  // grad_output to NHWC
               Launch(kConvWgrad);     // the images need no grad: weight grad only
             });
             x_end_ = tail7_;  // the last compute kernel of backward ends here
             FreeSlot(StepSlot());
             // DDP finalize_backward: the compute stream waits for every bucket's all-reduce.
             for (size_t i = 0; i < nccl_.size(); ++i) {
               RuntimeOnly("cudaStreamWaitEvent", 147, 1500, 3500);
               blocked_on_nccl_ = true;
             }
           });
  }

  void Optimizer() {
    Gap();
    Op(Kind::kAnnotation, "Optimizer.step#AdamW.step", [&] {
      CpuOp("aten::_foreach_add_", [&] { Launch(kAdamStepCount); });
      CpuOp("aten::_fused_adamw_", [&] {
        for (int c = 0; c < o_.layers; ++c) Launch(kFusedAdam);  // one chunk per block
        Launch(kFusedAdam, 40 * kUs);                            // stem + head
      });
    });
    Gap();
    Op(Kind::kAnnotation, "Optimizer.zero_grad#AdamW.zero_grad",
       [&] { cpu_ += Cpu(10 * kUs, 30 * kUs); });
    TinyGridLoop();
  }

  // Plants tiny grids: a per-parameter loop of kTinyLoopLaunches element-wise kernels with 16
  // blocks (fewer than SMs) whose time T makes the step's tiny-grid share of compute-kernel time
  // f: (tiny so far + T) / (compute so far + T) = f. GPU jitter moves the share by < 1 %; the
  // truth records what was written.
  void TinyGridLoop() {
    const double f = o_.tiny_grid_fraction;
    if (f <= 0.0) return;
    const double total =
        (f * static_cast<double>(step_compute_ns_) - static_cast<double>(step_tiny_ns_)) /
        (1.0 - f);
    if (total <= 0.0) return;
    constexpr int kTinyLoopLaunches = 8;
    const int64_t each = std::max<int64_t>(q_, std::llround(total / kTinyLoopLaunches));
    Gap();
    Op(Kind::kAnnotation, "## scale_grads_per_param ##", [&] {
      for (int i = 0; i < kTinyLoopLaunches; ++i) {
        CpuOp("aten::mul_", [&] { Launch(kTinyLoop, each); });
      }
    });
  }

  // ----- one step ---------------------------------------------------------------------------
  int64_t Uncovered(int64_t a, int64_t b) const {  // part of [a,b) with no compute kernel
    if (b <= a) return 0;
    int64_t covered = 0;
    auto it = std::lower_bound(compute_.begin(), compute_.end(), a,
                               [](const Interval& iv, int64_t t) { return iv.end <= t; });
    for (; it != compute_.end() && it->start < b; ++it) {
      covered += std::min(b, it->end) - std::max(a, it->start);
    }
    return (b - a) - covered;
  }

  int64_t PlaceDeferred(int64_t nccl_end) {
    int64_t tail = nccl_end;
    for (const Deferred& d : deferred_) {
      int64_t start = std::max(d.ready, tail + d.qgap);
      recs_[d.rec].start = start;
      recs_[d.rec].end = start + d.dur;
      tail = start + d.dur;
    }
    return tail;
  }

  // Places the all-reduces and the work queued behind the final one (writes their recs_), and
  // solves the exposed tail E and the DataLoader stall W for the step as simulated.
  struct Placement {
    int64_t g_done = 0;   // end of the step's last GPU op (frame)
    int64_t exposed = 0;  // X
    int64_t wait = 0;     // W
    int64_t host = 0;     // H: planted host gap before the first copy (host_gap_fraction)
  };
  Placement Place() {
    // --- place the all-reduces: non-final buckets overlap the following blocks' backward ---
    const int64_t q = q_;
    int64_t prev_end = kNegInf;
    int64_t slivers = 0;  // comm time without compute before the final tail (queue gaps etc.)
    for (size_t i = 0; i < nccl_.size(); ++i) {
      if (i == final_nccl_) continue;
      const NcclLaunch& n = nccl_[i];
      int64_t start = std::max({n.ready, n.event, prev_end + n.qgap});
      int64_t dur = n.natural;
      if (start + dur > x_end_ - q && start < x_end_ - 2 * q) dur = x_end_ - q - start;
      recs_[n.rec].start = start;
      recs_[n.rec].end = start + dur;
      prev_end = start + dur;
      slivers += Uncovered(start, start + dur);
    }
    const NcclLaunch& fin = nccl_[final_nccl_];
    const int64_t fin_start = std::max({fin.ready, fin.event, prev_end + fin.qgap});
    // The final kernel covers [fin_start, x_end + E]: it overlaps the rest of backward.
    slivers += Uncovered(fin_start, x_end_);
    recs_[fin.rec].start = fin_start;

    // --- solve the exposed tail E and the stall W so that, with span = G - first copy start
    // and P = W + span:  exposed(E) = f_comm * P  and  W = f_dl * P. ---
    const double f_dl = o_.dataloader_stall_fraction;
    const double f_comm = o_.exposed_comm_fraction;
    const double f_host = o_.host_gap_fraction;
    // P = W + H + span; without a host gap H = 0 and 1 - f_dl - f_host = 1 - f_dl as before.
    const double busy_share = 1.0 - f_dl - f_host;
    auto nccl_end_for = [&](int64_t tail) { return std::max(fin_start + q, x_end_ + tail); };
    auto exposed_for = [&](int64_t end) {
      return slivers + std::max<int64_t>(0, end - std::max(x_end_, fin_start));
    };
    int64_t tail = 0;
    for (int it = 0; it < 6; ++it) {
      int64_t g = PlaceDeferred(nccl_end_for(tail));
      double span = static_cast<double>(g - first_copy_start_);
      double residual =
          f_comm * span / busy_share - static_cast<double>(exposed_for(nccl_end_for(tail)));
      double slope = 1.0 - f_comm / busy_share;  // d(f_comm * P - exposed)/dE, W = f_dl * P
      int64_t next = tail + std::llround(residual / slope);
      next = next <= 0 ? 0 : (next + q / 2) / q * q;
      if (next == tail) break;
      tail = next;
    }
    const int64_t nccl_end = nccl_end_for(tail);
    const int64_t g_done = PlaceDeferred(nccl_end);
    const int64_t exposed = exposed_for(nccl_end);
    recs_[fin.rec].end = nccl_end;
    const int64_t span = g_done - first_copy_start_;
    const double period = static_cast<double>(span) / busy_share;
    // Written as before the host gap existed, so f_host = 0 keeps the output byte-identical.
    int64_t wait = std::llround(f_dl / busy_share * static_cast<double>(span));
    wait = (wait + q / 2) / q * q;
    // The GPU idles from the previous step's end to the first copy: W + H. The DataLoader covers
    // all of it but the host op and the copy's own launch (first_copy_start_ of the frame), so the
    // idle not covered by the DataLoader is H + min(W, first_copy_start_); H is solved to make
    // that f_host * P.
    int64_t host = 0;
    if (f_host > 0.0) {
      host = std::llround(f_host * period) - std::min(wait, first_copy_start_);
      host = std::max<int64_t>(0, (host + q / 2) / q * q);
    }
    return {g_done, exposed, wait, host};
  }

  // S of the step as placed: Σ over its sync points of the all-streams idle gap (every kernel,
  // memcpy and memset; touching ops join) that contains the end of the point's
  // cudaStreamSynchronize; 0 for a point whose end falls inside GPU work (an all-reduce still
  // running on stream 20). `clean` counts the points with an idle gap.
  int64_t SyncStall(int* clean = nullptr) {
    if (clean != nullptr) *clean = 0;
    if (sync_marks_.empty()) return 0;
    busy_.clear();
    for (const Rec& r : recs_) {
      if ((r.kind == Kind::kKernel || r.kind == Kind::kMemcpy || r.kind == Kind::kMemset) &&
          r.end > r.start) {
        busy_.push_back({r.start, r.end});
      }
    }
    std::sort(busy_.begin(), busy_.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    size_t n = 0;
    for (const Interval& iv : busy_) {
      if (n > 0 && iv.start <= busy_[n - 1].end) {
        busy_[n - 1].end = std::max(busy_[n - 1].end, iv.end);
      } else {
        busy_[n++] = iv;
      }
    }
    busy_.resize(n);
    int64_t total = 0;
    for (const SyncMark& m : sync_marks_) {
      auto it = std::upper_bound(busy_.begin(), busy_.end(), m.call_end_now,
                                 [](int64_t t, const Interval& iv) { return t < iv.start; });
      if (it == busy_.begin() || it == busy_.end()) continue;
      const Interval& prev = *(it - 1);
      if (m.call_end_now < prev.end) continue;  // GPU busy at the sync's end
      total += it->start - prev.end;
      if (clean != nullptr) ++*clean;
    }
    return total;
  }

  // Plants the sync stall: after every sync point of the step the CPU idles d ns (Python using
  // the value; no event, as without with_stack), which delays everything issued after it by d.
  // d (the same for every point of the step) is solved so that S = f_sync * P, P = W + span, by
  // Newton steps on the shifted, re-placed step (S, W, X and span are all re-solved each time).
  void SolveSyncStall(Placement* pl, int64_t* stall, int64_t* cpu_end) {
    const double f = o_.sync_stall_fraction;
    const double k =
        1.0 - o_.dataloader_stall_fraction - o_.exposed_comm_fraction - o_.host_gap_fraction;
    const double m = static_cast<double>(sync_marks_.size());
    const int64_t q = q_;
    std::vector<Interval> base_recs(recs_.size());
    for (size_t i = 0; i < recs_.size(); ++i) base_recs[i] = {recs_[i].start, recs_[i].end};
    const std::vector<Interval> base_compute = compute_;
    const std::vector<NcclLaunch> base_nccl = nccl_;
    const std::vector<Deferred> base_deferred = deferred_;
    const int64_t base_x_end = x_end_;
    const int64_t base_cpu_end = *cpu_end;
    // Frame time t after the stalls: + d per sync point that ended before t.
    auto shift = [&](int64_t t, int64_t d) {
      auto it = std::lower_bound(sync_marks_.begin(), sync_marks_.end(), t,
                                 [](const SyncMark& s, int64_t v) { return s.after < v; });
      return t + d * static_cast<int64_t>(it - sync_marks_.begin());
    };
    int clean = 0;
    auto apply = [&](int64_t d) {
      for (size_t i = 0; i < recs_.size(); ++i) {
        recs_[i].start = shift(base_recs[i].start, d);
        recs_[i].end = shift(base_recs[i].end, d);
      }
      for (size_t i = 0; i < compute_.size(); ++i) {
        compute_[i] = {shift(base_compute[i].start, d), shift(base_compute[i].end, d)};
      }
      for (size_t i = 0; i < nccl_.size(); ++i) {
        nccl_[i].ready = shift(base_nccl[i].ready, d);
        nccl_[i].event = shift(base_nccl[i].event, d);
      }
      for (size_t i = 0; i < deferred_.size(); ++i) {
        deferred_[i].ready = shift(base_deferred[i].ready, d);
      }
      for (SyncMark& mk : sync_marks_) mk.call_end_now = shift(mk.call_end, d);
      x_end_ = shift(base_x_end, d);
      *cpu_end = shift(base_cpu_end, d);
      *pl = Place();
      *stall = SyncStall(&clean);
    };
    SyncStall(&clean);
    int64_t d = 0;
    for (int it = 0; it < 12; ++it) {
      const double period =
          static_cast<double>(pl->wait + pl->host + pl->g_done - first_copy_start_);
      const double residual = f * period - static_cast<double>(*stall);
      // dS/dd = clean points; dP/dd = m / k (W and X grow with P).
      const double slope = static_cast<double>(clean) - f * m / k;
      if (slope <= 0.0) break;  // every sync hidden behind an all-reduce: cannot plant
      int64_t next = d + std::llround(residual / slope);
      next = next <= 0 ? 0 : (next + q / 2) / q * q;
      if (next == d) break;
      d = next;
      apply(d);
    }
  }

  // One step in two halves: StepBegin simulates the step in its own frame, places it (Place,
  // the sync stall) and puts it on the absolute clock (offset_); StepEnd books the truth and
  // writes it. Coupled ranks re-place their collectives on the job's common clock in between
  // (CoupleCollectives).
  void StepBegin(int step_number) {
    recs_.clear();
    compute_.clear();
    nccl_.clear();
    deferred_.clear();
    sync_marks_.clear();
    step_compute_ns_ = 0;
    step_tiny_ns_ = 0;
    tail7_ = kNegInf;
    blocked_on_nccl_ = false;
    first_copy_start_ = kNegInf;
    addr_cursor_ = 0;
    cur_ext_ = 0;
    cpu_ = 0;  // frame origin: the DataLoader returns the batch

    const int64_t s_i = s_next_;
    const int64_t eps = Cpu(6 * kUs, 20 * kUs);  // ProfilerStep start -> __next__ start
    end_gap_ = Cpu(5 * kUs, 30 * kUs);           // last CPU op -> ProfilerStep end
    step_rec_ = Add(Kind::kAnnotation, "ProfilerStep#");
    recs_[step_rec_].ext = ++ext_id_;
    recs_[step_rec_].a = step_number;
    dl_rec_ = Add(Kind::kAnnotation, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    recs_[dl_rec_].ext = ++ext_id_;

    CopyToDevice(kInputBytes);
    CopyToDevice(kLabelBytes);
    Stem();
    for (int l = 0; l < o_.layers; ++l) {
      Syncs(l);
      ForwardBlock(l);
    }
    HeadForward();
    Syncs(o_.layers);  // e.g. loss.item() for logging
    HeadBackward();
    for (int l = o_.layers - 1; l >= 0; --l) {
      if (l < o_.layers - 1) Syncs(2 * o_.layers - 1 - l);
      BackwardBlock(l);
    }
    StemBackward();
    Optimizer();
    cpu_end_ = cpu_;

    pl_ = Place();
    sync_stall_ = SyncStall();
    if (o_.sync_stall_fraction > 0.0 && !sync_marks_.empty()) {
      SolveSyncStall(&pl_, &sync_stall_, &cpu_end_);
    }
    const int64_t wait = pl_.wait;
    const int64_t host = pl_.host;

    // --- absolute placement: the first copy starts `wait` after the previous step's last GPU
    // op. The DataLoader covers [S_i + eps, copy launch]; if that would be shorter than
    // kMinDataLoaderNs (CPU behind), the whole step slides later and the stall grows. ---
    // A planted host gap H sits between the DataLoader's return and the copy: the DataLoader
    // ends H before the frame origin and "## log_metrics ##" fills [-H, 0).
    int64_t copy_abs = g_done_prev_ + wait + host;
    const int64_t dl_start_abs = s_i + eps;
    if (copy_abs - first_copy_start_ - host - dl_start_abs < kMinDataLoaderNs) {
      copy_abs = dl_start_abs + kMinDataLoaderNs + host + first_copy_start_;
    }
    offset_ = copy_abs - first_copy_start_;
    s_i_ = s_i;
    copy_abs_ = copy_abs;
    dl_start_abs_ = dl_start_abs;
  }

  void StepEnd(bool write) {
    const int64_t offset = offset_;
    const int64_t copy_abs = copy_abs_;
    const int64_t dl_start_abs = dl_start_abs_;
    const int64_t g_done = pl_.g_done;
    const int64_t exposed = pl_.exposed;
    const int64_t host = pl_.host;
    const int64_t sync_stall = sync_stall_;
    const int64_t wait_actual = copy_abs - g_done_prev_;
    const int64_t g_done_abs = offset + g_done;
    const int64_t cpu_end_abs = offset + cpu_end_;
    s_next_ = std::max(g_done_abs - kCpuLeadNs, cpu_end_abs + end_gap_);
    recs_[step_rec_].start = s_i_ - offset;
    recs_[step_rec_].end = s_next_ - end_gap_ - offset;
    recs_[dl_rec_].start = dl_start_abs - offset;
    recs_[dl_rec_].end = -host;
    if (host > 0) {
      size_t h = Add(Kind::kAnnotation, "## log_metrics ##");
      recs_[h].ext = ++ext_id_;
      recs_[h].start = -host;
      recs_[h].end = 0;
    }
    // GPU idle before the first copy that the DataLoader does not cover.
    {
      const int64_t idle_lo = g_done_prev_, idle_hi = copy_abs;
      const int64_t dl_lo = dl_start_abs, dl_hi = offset - host;
      const int64_t covered =
          std::max<int64_t>(0, std::min(idle_hi, dl_hi) - std::max(idle_lo, dl_lo));
      sum_host_gap_ += (idle_hi - idle_lo) - covered;
    }
    sum_tiny_ns_ += step_tiny_ns_;
    sum_compute_ns_ += step_compute_ns_;

    sum_wait_ += wait_actual;
    sum_exposed_ += exposed;
    sum_sync_stall_ += sync_stall;
    sum_period_ += g_done_abs - g_done_prev_;
    g_done_prev_ = g_done_abs;
    last_end_ = std::max(g_done_abs, s_next_);

    if (!write) return;
    if (coupled_ && o_.clock_noise_ns > 0) {
      // This step's extra clock error (SynthOptions::clock_noise_ns).
      const uint64_t span = static_cast<uint64_t>(o_.clock_noise_ns / q_) * 2 + 1;
      const uint64_t h = Mix64(seed_ ^ 0x6e6f697365ULL ^ Mix64(static_cast<uint64_t>(rank_)) ^
                               Mix64(0x100000 + static_cast<uint64_t>(steps_written_)));
      clock_noise_ = (static_cast<int64_t>(h % span) - o_.clock_noise_ns / q_) * q_;
    }
    Serialize(offset);
    clock_noise_ = 0;
    ++steps_written_;
  }

  // ----- serialization ----------------------------------------------------------------------
  void Begin() {
    if (!first_event_) out_.Lit(",\n");
    first_event_ = false;
    out_.Lit("  {\n");
    ++truth_.events;
  }
  // Timestamps as this rank's clock reads them: true time + its offset (+ this step's noise).
  void Ts(int64_t abs_ns) {
    out_.Micros(abs_ns + clock_offset_ + clock_noise_ - print_base_, o_.integer_timestamps);
  }
  void Dur(int64_t ns) { out_.Micros(ns, o_.integer_timestamps); }

  // "ph": "X" up to the opening of args.
  void XHead(std::string_view cat, std::string_view name, int64_t pid, int64_t tid, int64_t start,
             int64_t end) {
    out_.Lit("    \"ph\": \"X\", \"cat\": \"");
    out_.Put(cat);
    out_.Lit("\", \"name\": \"");
    out_.Put(name);
    out_.Lit("\", \"pid\": ");
    out_.Int(pid);
    out_.Lit(", \"tid\": ");
    out_.Int(tid);
    out_.Lit(",\n    \"ts\": ");
    Ts(start);
    out_.Lit(", \"dur\": ");
    Dur(end - start);
    out_.Lit(",\n    \"args\": {\n      ");
  }
  void XTail() { out_.Lit("\n    }\n  }"); }

  void Flow(bool finish, int64_t id, int64_t pid, int64_t tid, int64_t ts) {
    Begin();
    out_.Lit("    \"ph\": \"");
    out_.Put(finish ? "f" : "s");
    out_.Lit("\", \"id\": ");
    out_.Int(id);
    out_.Lit(", \"pid\": ");
    out_.Int(pid);
    out_.Lit(", \"tid\": ");
    out_.Int(tid);
    out_.Lit(", \"ts\": ");
    Ts(ts);
    if (finish) {
      out_.Lit(",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }");
    } else {
      out_.Lit(",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }");
    }
    ++truth_.flow_events;
  }

  void GpuArgs(const Rec& r, int stream) {
    out_.Lit("\"External id\": ");
    out_.Int(r.ext);
    if (r.kind == Kind::kKernel) out_.Lit(",      \"queued\": 0");
    out_.Lit(", \"device\": ");
    out_.Int(device_);
    out_.Lit(", \"context\": 1,      \"stream\": ");
    out_.Int(stream);
    out_.Lit(", \"correlation\": ");
    out_.Int(r.corr);
  }

  void Serialize(int64_t offset) {
    for (const Rec& r : recs_) {
      const int64_t start = r.start + offset;
      const int64_t end = r.end + offset;
      switch (r.kind) {
        case Kind::kCpuOp:
        case Kind::kAnnotation: {
          Begin();
          const bool op = r.kind == Kind::kCpuOp;
          if (r.a != 0 && !op && r.name[0] == 'P') {  // ProfilerStep#N
            char name[40];  // "ProfilerStep#" and at most 20 digits of an int64
            const size_t n = fmt::format_to_n(name, sizeof(name), "ProfilerStep#{}", r.a).size;
            XHead("user_annotation", std::string_view(name, n), pid_, tid_, start, end);
          } else {
            XHead(op ? "cpu_op" : "user_annotation", r.name, pid_, tid_, start, end);
          }
          out_.Lit("\"External id\": ");
          out_.Int(r.ext);
          if (r.comm) {
            out_.Lit(", \"Collective name\": \"allreduce\", \"In msg nelems\": ");
            out_.Int(r.a);
            out_.Lit(", \"Out msg nelems\": ");
            out_.Int(r.a);
            out_.Put(comm_tail_);
            out_.Lit(", \"Global rank start\": 0, \"Global rank stride\": 1");
            if (coupled_) {
              out_.Lit(", \"Seq\": ");
              out_.Int(r.b);
            }
          }
          XTail();
          if (op) {
            ++truth_.cpu_ops;
          } else {
            ++truth_.user_annotations;
          }
          break;
        }
        case Kind::kRuntime: {
          Begin();
          XHead("cuda_runtime", r.name, pid_, tid_, start, end);
          out_.Lit("\"External id\": ");
          out_.Int(r.ext);
          out_.Lit(",      \"cbid\": ");
          out_.Int(r.cbid);
          out_.Lit(", \"correlation\": ");
          out_.Int(r.corr);
          XTail();
          ++truth_.runtime_calls;
          if (r.cbid == 211) ++truth_.kernel_launches;
          if (r.cbid == 131) ++truth_.sync_calls;
          if (r.has_gpu) Flow(false, r.corr, pid_, tid_, start);
          break;
        }
        case Kind::kKernel: {
          const KernelInfo& info = kernels_[r.kernel];
          const int stream = r.comm ? kNcclStream : kComputeStream;
          Begin();
          XHead("kernel", info.name, device_, stream, start, end);
          GpuArgs(r, stream);
          out_.Put(info.static_args);
          if (r.comm) {
            out_.Lit(", \"Collective name\": \"allreduce\", \"In msg nelems\": ");
            out_.Int(r.a);
            out_.Lit(", \"Out msg nelems\": ");
            out_.Int(r.a);
            out_.Put(comm_tail_);
            if (coupled_) {
              out_.Lit(", \"Seq\": ");
              out_.Int(r.b);
            }
            ++truth_.nccl_kernels;
          }
          XTail();
          ++truth_.kernels;
          Flow(true, r.corr, device_, stream, start);
          break;
        }
        case Kind::kMemcpy:
        case Kind::kMemset: {
          Begin();
          const bool copy = r.kind == Kind::kMemcpy;
          XHead(copy ? "gpu_memcpy" : "gpu_memset", r.name, device_, kComputeStream, start, end);
          GpuArgs(r, kComputeStream);
          out_.Lit(",      \"bytes\": ");
          out_.Int(r.a);
          out_.Lit(", \"memory bandwidth (GB/s)\": ");
          out_.Double(static_cast<double>(r.a) / static_cast<double>(end - start));
          XTail();
          if (copy) {
            ++truth_.memcpys;
          } else {
            ++truth_.memsets;
          }
          Flow(true, r.corr, device_, kComputeStream, start);
          break;
        }
        case Kind::kMemory: {
          Begin();
          out_.Lit(
              "    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": "
              "\"[memory]\",\n    \"pid\": ");
          out_.Int(pid_);
          out_.Lit(", \"tid\": ");
          out_.Int(tid_);
          out_.Lit(",\n    \"ts\": ");
          Ts(start);
          out_.Lit(",\n    \"args\": {\n      \"Total Reserved\": ");
          out_.Int(r.d);
          out_.Lit(", \"Total Allocated\": ");
          out_.Int(r.c);
          out_.Lit(", \"Bytes\": ");
          out_.Int(r.a);
          out_.Lit(", \"Addr\": ");
          out_.Int(r.b);
          out_.Lit(", \"Device Id\": ");
          out_.Int(device_);
          out_.Lit(", \"Device Type\": 1");
          XTail();
          ++truth_.memory_events;
          break;
        }
      }
    }
  }

  void WriteHeader() {
    out_.Lit("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
    const int devices = std::min(world_, 8);
    const std::string name = JsonEscape(o_.device_name);
    for (int d = 0; d < devices; ++d) {
      const std::string device = fmt::format(
          "{}\n    {{\n      \"id\": {}, \"name\": \"{}\", \"totalGlobalMem\": {},\n      "
          "\"computeMajor\": {}, \"computeMinor\": {},\n      \"maxThreadsPerBlock\": 1024, "
          "\"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, \"warpSize\": "
          "32,\n      \"sharedMemPerBlock\": 49152, \"numSms\": {}\n    , "
          "\"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": {}, "
          "\"sharedMemPerMultiprocessor\": {}\n    }}",
          d == 0 ? "" : ",", d, name, o_.device_memory_bytes, props_.major, props_.minor,
          props_.num_sms, props_.smem_optin, props_.smem_per_sm);
      out_.Put(device.data(), device.size());
    }
    out_.Lit("\n  ],\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ");
    out_.Int(rank_);
    out_.Lit(", \"world_size\": ");
    out_.Int(world_);
    out_.Lit(
        ", \"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", "
        "\"backend_config\": \"cuda:nccl\", \"pg_size\": ");
    out_.Int(world_);
    out_.Lit(", \"ranks\": ");
    out_.Put(pg_ranks_);
    out_.Lit("}], \"nccl_version\": \"2.20.5\"},\n  \"traceEvents\": [\n");
  }

  void Meta(const char* what, int64_t pid, int64_t tid, const char* key, const std::string& value,
            bool quoted) {
    Begin();
    out_.Lit("    \"name\": \"");
    out_.Put(std::string_view(what));
    out_.Lit("\", \"ph\": \"M\", \"ts\": ");
    Ts(profiler_start_);
    out_.Lit(", \"pid\": ");
    out_.Int(pid);
    out_.Lit(", \"tid\": ");
    out_.Int(tid);
    out_.Lit(",\n    \"args\": {\n      \"");
    out_.Put(std::string_view(key));
    out_.Lit("\": ");
    if (quoted) out_.Lit("\"");
    out_.Put(value);
    if (quoted) out_.Lit("\"");
    XTail();
  }

  void WriteFooter() {
    // Metadata (Kineto writes it after the activities).
    const std::string python = "python3.10";
    Meta("process_name", pid_, 0, "name", python, true);
    Meta("process_labels", pid_, 0, "labels", "CPU", true);
    Meta("process_sort_index", pid_, 0, "sort_index", std::to_string(pid_), false);
    Meta("process_name", device_, 0, "name", python, true);
    Meta("process_labels", device_, 0, "labels", "GPU " + std::to_string(device_), true);
    Meta("process_sort_index", device_, 0, "sort_index", std::to_string(16777216 + device_), false);
    for (int stream : {kComputeStream, kNcclStream}) {
      Meta("thread_name", device_, stream, "name", "stream " + std::to_string(stream) + " ", true);
      Meta("thread_sort_index", device_, stream, "sort_index", std::to_string(stream), false);
    }
    Meta("thread_name", pid_, tid_, "name", "thread " + std::to_string(tid_) + " (pt_main_thread)",
         true);
    Meta("thread_sort_index", pid_, tid_, "sort_index", std::to_string(tid_), false);

    // The profiler span, as every Kineto trace has it (pid "Spans", cat "Trace").
    const int64_t end = last_end_ + Quant(500 * kUs);
    Begin();
    out_.Lit("    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ");
    Ts(profiler_start_);
    out_.Lit(", \"dur\": ");
    Dur(end - profiler_start_);
    out_.Lit(
        ",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch "
        "Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0");
    XTail();
    Begin();
    out_.Lit("    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": ");
    Ts(profiler_start_);
    out_.Lit(
        ",\n    \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {\n      \"sort_index\": 536870912");
    XTail();
    Begin();
    out_.Lit(
        "    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n    "
        "\"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ");
    Ts(profiler_start_);
    out_.Lit("\n  }");
    Begin();
    out_.Lit(
        "    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", "
        "\"tid\": \"\", \"ts\": ");
    Ts(end);
    out_.Lit("\n  }");

    out_.Lit("\n  ],\n  \"traceName\": \"/tmp/libkineto_activities_");
    out_.Int(pid_);
    out_.Lit(".json\",\n  \"displayTimeUnit\": \"ms\"");
    if (emit_base_) {
      out_.Lit(",\n  \"baseTimeNanoseconds\": ");
      out_.Int(print_base_);
    }
    out_.Lit("\n}\n");
  }

  // ----- coupled ranks ------------------------------------------------------------------------
  // Arrival jitter at collective c (global index in the trace, the same on every rank): rank d1(c)
  // gets the maximum J, rank d2(c) J − 1 quantum, the other on-time ranks less, the special rank
  // anything in [0, J]; so the largest jitter among any set of ranks is known without visiting
  // them (1,000 ranks stay cheap). In quanta of q_ (1 ns, or 1 µs with integer timestamps).
  struct Designated {
    int d1 = -1, d2 = -1;  // ranks
    uint64_t h = 0;
  };
  int OnTimeCount() const { return world_ - (special_rank_ >= 0 ? 1 : 0); }
  int OnTimeRank(int index) const {
    return special_rank_ >= 0 && index >= special_rank_ ? index + 1 : index;
  }
  Designated DesignatedOf(uint64_t c) const {
    Designated d;
    d.h = Mix64(seed_ ^ 0x6a1773ULL ^ Mix64(c));
    const int n = OnTimeCount();
    if (n >= 1) {
      const int i1 = static_cast<int>(d.h % static_cast<uint64_t>(n));
      d.d1 = OnTimeRank(i1);
      if (n >= 2) {
        const int i2 = (i1 + 1 + static_cast<int>((d.h >> 32) % static_cast<uint64_t>(n - 1))) % n;
        d.d2 = OnTimeRank(i2);
      }
    }
    return d;
  }
  int64_t JitterOf(int rank, uint64_t c) const {
    const int64_t j = jitter_quanta_;
    if (j <= 0) return 0;
    const Designated d = DesignatedOf(c);
    if (rank == special_rank_) {
      return static_cast<int64_t>(Mix64(d.h ^ 0x5eccULL) % static_cast<uint64_t>(j + 1)) * q_;
    }
    if (rank == d.d1) return j * q_;
    if (rank == d.d2) return (j - 1) * q_;
    if (j < 2) return 0;
    const uint64_t r = Mix64(d.h ^ Mix64(0x7000000 + static_cast<uint64_t>(rank)));
    return static_cast<int64_t>(r % static_cast<uint64_t>(j - 1)) * q_;
  }
  // The largest jitter among the on-time ranks other than `exclude` (-1: none excluded), or
  // kNegInf when there is no such rank.
  int64_t MaxOnTimeJitter(int exclude, uint64_t c) const {
    const int n = OnTimeCount() - (exclude >= 0 && exclude != special_rank_ ? 1 : 0);
    if (n <= 0) return kNegInf;
    const int64_t j = std::max<int64_t>(0, jitter_quanta_);
    if (j == 0) return 0;
    const Designated d = DesignatedOf(c);
    return (exclude == d.d1 ? j - 1 : j) * q_;
  }

  // Places every collective of the step on the job's common clock (coupled ranks). Each rank's
  // NCCL kernel starts at its arrival: its own start as simulated (behind its compute, its launch
  // and its NCCL stream, whose previous kernel ended at the common end) plus its jitter; every
  // rank's kernel ends at the common end E = the last arrival + the collective's transfer time
  // (non-final buckets: clipped before backward ends, as Place does; the final bucket: also no
  // earlier than any rank's own planted end). Then each variant re-places the work queued
  // behind the final all-reduce and its exposed communication, and this rank books its waits.
  void CoupleCollectives(RankGenerator* shadow) {
    RankGenerator* on = rank_ == special_rank_ ? shadow : this;
    RankGenerator* sp = rank_ == special_rank_ ? this : shadow;
    RankGenerator* variants[2] = {this, shadow};
    const int nv = shadow != nullptr ? 2 : 1;
    const size_t nc = nccl_.size();
    const int64_t q = q_;
    int64_t lim = INT64_MAX;  // non-final buckets end before backward ends on every variant
    for (int v = 0; v < nv; ++v) {
      lim = std::min(lim, variants[v]->offset_ + variants[v]->x_end_ - q);
    }
    std::vector<int64_t> natural_final(2, kNegInf);
    for (int v = 0; v < nv; ++v) {
      RankGenerator& g = *variants[v];
      natural_final[static_cast<size_t>(v)] = g.offset_ + g.recs_[g.nccl_[g.final_nccl_].rec].end;
    }
    int64_t prev_end = kNegInf;  // absolute
    std::vector<int64_t> starts(2, 0);
    auto place = [&](size_t i, bool final) {
      const uint64_t c = collectives_done_ + i;
      int64_t latest = kNegInf;
      for (int v = 0; v < nv; ++v) {
        RankGenerator& g = *variants[v];
        const NcclLaunch& n = g.nccl_[i];
        const int64_t queued = prev_end == kNegInf ? kNegInf : prev_end - g.offset_ + n.qgap;
        starts[static_cast<size_t>(v)] = std::max({n.ready, n.event, queued});
      }
      const int64_t abs_on = on != nullptr ? on->offset_ + starts[on == this ? 0 : 1] : kNegInf;
      const int64_t abs_sp = sp != nullptr ? sp->offset_ + starts[sp == this ? 0 : 1] : kNegInf;
      if (on != nullptr) latest = std::max(latest, abs_on + MaxOnTimeJitter(-1, c));
      if (sp != nullptr) latest = std::max(latest, abs_sp + JitterOf(special_rank_, c));
      int64_t end = latest + nccl_[i].natural;
      if (!final) {
        if (end > lim && latest < lim - q) end = lim;
      } else {
        for (int v = 0; v < nv; ++v) end = std::max(end, natural_final[static_cast<size_t>(v)]);
      }
      for (int v = 0; v < nv; ++v) {
        RankGenerator& g = *variants[v];
        Rec& r = g.recs_[g.nccl_[i].rec];
        const int64_t own = v == 0 ? JitterOf(rank_, c) : 0;
        r.start = starts[static_cast<size_t>(v)] + own;
        r.end = end - g.offset_;
      }
      // This rank's waits: its arrival against the latest of the others'.
      const int64_t mine = offset_ + starts[0] + JitterOf(rank_, c);
      int64_t others = kNegInf;
      if (on != nullptr) {
        const int64_t j = MaxOnTimeJitter(rank_, c);
        if (j != kNegInf) others = std::max(others, abs_on + j);
      }
      if (sp != nullptr && rank_ != special_rank_) {
        others = std::max(others, abs_sp + JitterOf(special_rank_, c));
      }
      if (others != kNegInf) {
        if (mine > others) {
          sum_wait_caused_ += mine - others;
          ++truth_.times_last;
        } else {
          sum_wait_suffered_ += others - mine;
        }
      }
      prev_end = end;
    };
    for (size_t i = 0; i < nc; ++i) {
      if (i != final_nccl_) place(i, false);
    }
    place(final_nccl_, true);
    const int64_t final_end = prev_end;
    for (int v = 0; v < nv; ++v) {
      RankGenerator& g = *variants[v];
      const int64_t end = final_end - g.offset_;
      int64_t slivers = 0;
      for (size_t i = 0; i < nc; ++i) {
        const Rec& r = g.recs_[g.nccl_[i].rec];
        slivers +=
            i == g.final_nccl_ ? g.Uncovered(r.start, g.x_end_) : g.Uncovered(r.start, r.end);
      }
      const int64_t fin_start = g.recs_[g.nccl_[g.final_nccl_].rec].start;
      g.pl_.g_done = g.PlaceDeferred(end);
      g.pl_.exposed = slivers + std::max<int64_t>(0, end - std::max(g.x_end_, fin_start));
      g.sync_stall_ = g.SyncStall();
      g.collectives_done_ += nc;
    }
  }

  // ----- state ------------------------------------------------------------------------------
  const SynthOptions& o_;
  const int rank_;
  const int run_;
  const uint64_t seed_;  // this run's seed
  const bool coupled_;
  const int special_rank_;  // coupled: the late rank (else the straggler), or -1
  const bool bf16_;
  const int64_t q_;  // time quantum: 1 ns, or 1 µs for integer timestamps
  Rng cpu_rng_;      // CPU-side and per-rank noise
  Rng gpu_common_;   // kernel duration noise shared by all ranks (same structure, same draws)
  Rng gpu_rank_;     // small per-rank kernel noise
  const DeviceProps props_;
  Output out_;
  SynthTruth truth_;
  bool first_event_ = true;

  int64_t pid_ = 0, tid_ = 0;
  int device_ = 0;
  int world_ = 1;
  int64_t es_ = 2;  // activation element size (bytes)
  int first_step_number_ = 2;
  bool straggler_ = false;
  bool late_ = false;  // coupled: this is the late rank
  std::vector<KernelInfo> kernels_;
  std::string pg_ranks_;
  std::string comm_tail_;
  double bus_bw_ = 100.0;
  int layers_per_bucket_ = 1;
  std::vector<int> sync_before_;

  // Clocks (absolute unix ns unless noted).
  int64_t trace_start_ = 0;
  int64_t profiler_start_ = 0;  // the Trace span's start (coupled: up to 3 ms before trace_start_)
  int64_t print_base_ = 0;
  int64_t clock_offset_ = 0;  // this rank's clock − true time
  int64_t clock_noise_ = 0;   // this step's extra clock error
  int steps_written_ = 0;
  bool emit_base_ = true;
  int64_t s_next_ = 0;       // start of the next ProfilerStep
  int64_t g_done_prev_ = 0;  // end of the previous step's last GPU op
  int64_t last_end_ = 0;
  int64_t corr_id_ = 0;
  int64_t ext_id_ = 0;

  // Per-step simulation state (step frame).
  std::vector<Rec> recs_;
  std::vector<Interval> compute_;
  std::vector<NcclLaunch> nccl_;
  size_t final_nccl_ = 0;
  std::vector<Deferred> deferred_;
  std::vector<SyncMark> sync_marks_;  // in issue order
  std::vector<Interval> busy_;        // scratch: merged GPU busy time (SyncStall)
  int64_t cpu_ = 0;
  int64_t tail7_ = kNegInf;
  int64_t x_end_ = 0;
  int64_t first_copy_start_ = kNegInf;
  bool blocked_on_nccl_ = false;
  int64_t cur_ext_ = 0;
  // Between StepBegin and StepEnd.
  Placement pl_;
  int64_t sync_stall_ = 0;
  int64_t cpu_end_ = 0;
  int64_t end_gap_ = 0;
  size_t step_rec_ = 0, dl_rec_ = 0;
  int64_t s_i_ = 0, offset_ = 0, copy_abs_ = 0, dl_start_abs_ = 0;
  // Coupled ranks.
  int64_t jitter_quanta_ = 0;
  int64_t seq_next_ = 0;           // "Seq" of the next collective
  uint64_t collectives_done_ = 0;  // collectives of the earlier steps
  int64_t sum_wait_caused_ = 0;
  int64_t sum_wait_suffered_ = 0;

  // Allocator.
  int64_t allocated_ = 0;
  int64_t reserved_ = 0;
  int64_t addr_base_ = 0;
  int64_t addr_cursor_ = 0;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> live_;

  // Truth accumulators.
  int64_t sum_wait_ = 0;
  int64_t sum_exposed_ = 0;
  int64_t sum_sync_stall_ = 0;
  int64_t sum_host_gap_ = 0;
  int64_t sum_tiny_ns_ = 0;
  int64_t sum_compute_ns_ = 0;
  int64_t step_compute_ns_ = 0;  // this step's compute-kernel time (NCCL excluded) so far
  int64_t step_tiny_ns_ = 0;     // of which kernels with fewer blocks than SMs
  int64_t sum_period_ = 0;
};

Status Validate(const SynthOptions& o) {
  auto usage = [](const std::string& msg) {
    return Status::Error(StatusCode::kUsage, "synth: " + msg);
  };
  auto fraction_ok = [](double f) { return std::isfinite(f) && f >= 0.0 && f < 0.95; };
  if (o.ranks < 1) return usage("ranks must be >= 1 (got " + std::to_string(o.ranks) + ")");
  if (o.target_bytes == 0 && o.steps < 1) {
    return usage("steps must be >= 1 (got " + std::to_string(o.steps) + ")");
  }
  if (o.layers < 1 || o.layers > 4096) {
    return usage("layers must be in [1, 4096] (got " + std::to_string(o.layers) + ")");
  }
  if (!fraction_ok(o.dataloader_stall_fraction)) {
    return usage("dataloader_stall_fraction must be in [0, 0.95) (got " +
                 std::to_string(o.dataloader_stall_fraction) + ")");
  }
  if (!fraction_ok(o.exposed_comm_fraction)) {
    return usage("exposed_comm_fraction must be in [0, 0.95) (got " +
                 std::to_string(o.exposed_comm_fraction) + ")");
  }
  if (!std::isfinite(o.sync_stall_fraction) || o.sync_stall_fraction < 0.0 ||
      o.sync_stall_fraction >= 0.9) {
    return usage("sync_stall_fraction must be in [0, 0.9) (got " +
                 std::to_string(o.sync_stall_fraction) + ")");
  }
  if (!std::isfinite(o.host_gap_fraction) || o.host_gap_fraction < 0.0 ||
      o.host_gap_fraction >= 0.9) {
    return usage("host_gap_fraction must be in [0, 0.9) (got " +
                 std::to_string(o.host_gap_fraction) + ")");
  }
  if (!std::isfinite(o.tiny_grid_fraction) || o.tiny_grid_fraction < 0.0 ||
      o.tiny_grid_fraction >= 0.9) {
    return usage("tiny_grid_fraction must be in [0, 0.9) (got " +
                 std::to_string(o.tiny_grid_fraction) + ")");
  }
  const double planted = o.dataloader_stall_fraction + o.exposed_comm_fraction +
                         o.sync_stall_fraction + o.host_gap_fraction;
  if (planted >= 0.95) {
    return usage(
        "dataloader_stall_fraction + exposed_comm_fraction + sync_stall_fraction + "
        "host_gap_fraction must be < 0.95 (got " +
        std::to_string(planted) + ")");
  }
  if (o.sync_points_per_step < 0 || o.sync_points_per_step > 10000) {
    return usage("sync_points_per_step must be in [0, 10000] (got " +
                 std::to_string(o.sync_points_per_step) + ")");
  }
  if (o.straggler_rank < -1 || o.straggler_rank >= o.ranks) {
    return usage("straggler_rank must be -1 (none) or a rank in [0, " + std::to_string(o.ranks) +
                 ") (got " + std::to_string(o.straggler_rank) + ")");
  }
  if (!std::isfinite(o.straggler_slowdown) || o.straggler_slowdown < 0.1 ||
      o.straggler_slowdown > 100.0) {
    return usage("straggler_slowdown must be in [0.1, 100] (got " +
                 std::to_string(o.straggler_slowdown) + ")");
  }
  if (!std::isfinite(o.slow_kernel_factor) || o.slow_kernel_factor < 0.1 ||
      o.slow_kernel_factor > 100.0) {
    return usage("slow_kernel_factor must be in [0.1, 100] (got " +
                 std::to_string(o.slow_kernel_factor) + ")");
  }
  if (o.device_memory_bytes <= 0) return usage("device_memory_bytes must be > 0");
  if (o.late_rank < -1 || o.late_rank >= o.ranks) {
    return usage("late_rank must be -1 (none) or a rank in [0, " + std::to_string(o.ranks) +
                 ") (got " + std::to_string(o.late_rank) + ")");
  }
  constexpr int64_t kHour = 3600 * kSec;
  if (o.late_ns < 0 || o.late_ns > 10 * kSec) {
    return usage("late_ns must be in [0, 10 s] (got " + std::to_string(o.late_ns) + ")");
  }
  if (o.arrival_jitter_ns < 0 || o.arrival_jitter_ns > kSec) {
    return usage("arrival_jitter_ns must be in [0, 1 s] (got " +
                 std::to_string(o.arrival_jitter_ns) + ")");
  }
  if (o.clock_offset_max_ns < 0 || o.clock_offset_max_ns > kHour) {
    return usage("clock_offset_max_ns must be in [0, 1 h] (got " +
                 std::to_string(o.clock_offset_max_ns) + ")");
  }
  if (o.clock_noise_ns < 0 || o.clock_noise_ns > kHour) {
    return usage("clock_noise_ns must be in [0, 1 h] (got " + std::to_string(o.clock_noise_ns) +
                 ")");
  }
  if (o.runs < 1 || o.runs > 1000) {
    return usage("runs must be in [1, 1000] (got " + std::to_string(o.runs) + ")");
  }
  if (Coupled(o) && o.late_rank >= 0 && o.straggler_rank >= 0 && o.late_rank != o.straggler_rank) {
    return usage(
        "with coupled ranks, late_rank and straggler_rank must be the same rank (one "
        "rank is generated differently from the others)");
  }
  if (SpecialRank(o) >= 0 && o.sync_stall_fraction > 0.0) {
    return usage(
        "sync_stall_fraction cannot be planted together with a late rank or a straggler "
        "of coupled ranks (the stall is solved per rank, the ranks would drift apart)");
  }
  return Status::Ok();
}

// One file: rank `rank` of run `run`. Coupled ranks with a special rank step a second generator
// of the other kind alongside (RankGenerator::Run).
Result<SynthTruth> WriteOne(const SynthOptions& options, int run, int rank,
                            const std::string& path) {
  RankGenerator gen(options, run, rank);
  std::unique_ptr<RankGenerator> shadow;
  const int special = SpecialRank(options);
  if (special >= 0 && options.ranks >= 2) {
    const int other = rank == special ? (special + 1) % options.ranks : special;
    shadow = std::make_unique<RankGenerator>(options, run, other);
  }
  return gen.Run(path, shadow.get());
}

}  // namespace

Result<SynthTruth> WriteSynthTrace(const SynthOptions& options, int rank, const std::string& path) {
  Status st = Validate(options);
  if (!st.ok()) return st;
  if (rank < 0 || rank >= options.ranks) {
    return Status::Error(StatusCode::kUsage, "synth: rank must be in [0, " +
                                                 std::to_string(options.ranks) + ") (got " +
                                                 std::to_string(rank) + ")");
  }
  return WriteOne(options, 0, rank, path);
}

Result<std::vector<SynthTruth>> WriteSynthTraces(const SynthOptions& options,
                                                 const std::string& dir) {
  Status st = Validate(options);
  if (!st.ok()) return st;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::Error(StatusCode::kIoError, dir + ": cannot create directory: " + ec.message());
  }
  std::vector<SynthTruth> truths;
  truths.reserve(static_cast<size_t>(options.ranks) * static_cast<size_t>(options.runs));
  for (int run = 0; run < options.runs; ++run) {
    for (int r = 0; r < options.ranks; ++r) {
      const std::string name = (options.runs > 1 ? "run" + std::to_string(run) + "." : "") +
                               "rank" + std::to_string(r) + ".pt.trace.json" +
                               (options.gzip ? ".gz" : "");
      Result<SynthTruth> t =
          WriteOne(options, run, r, (std::filesystem::path(dir) / name).string());
      GPUSCOPE_RETURN_IF_ERROR(t.status());
      truths.push_back(std::move(*t));
    }
  }
  return truths;
}

}  // namespace gpuscope

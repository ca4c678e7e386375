#include "analyze/kernel_class.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// Where shared/ (real traces and reference outputs) lives. The build may define it; the
// environment variable of the same name wins, as in tests/test_util.h.
#ifndef GPUSCOPE_SHARED_DIR
#define GPUSCOPE_SHARED_DIR "../shared"
#endif

namespace gpuscope::analyze {
namespace {

std::string SharedDir() {
  if (const char* env = std::getenv("GPUSCOPE_SHARED_DIR")) return env;
  return GPUSCOPE_SHARED_DIR;
}

// ---------------------------------------------------------------------------------------------
// Real kernel names, copied from the shared traces (kept here so the unit tests need no files).

constexpr const char* kNcclAllReduce =
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
constexpr const char* kAddKernel =
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, "
    "3>)";
constexpr const char* kCutlassS1688 =
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(cutlass_80_"
    "tensorop_s1688gemm_128x128_16x4_nn_align4::Params)";
constexpr const char* kCutlassSimtSgemm =
    "void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_"
    "8x5_nn_align1::Params)";
constexpr const char* kCudnnS1688Fprop =
    "void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_128x128_16x4_nhwc_"
    "align4>(cutlass_tensorop_s1688fprop_optimized_tf32_128x128_16x4_nhwc_align4::Params)";
constexpr const char* kXmmaFpropTf32 =
    "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_"
    "stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer";
constexpr const char* kXmmaWgradTf32 =
    "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x64_"
    "stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_train";
// cuDNN's own CUTLASS copy, not demangled in the trace (nccl_parser_config_A100_rank0of2).
constexpr const char* kMangledCutlassConvTf32 =
    "_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22Im"
    "plicitGemmMultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52Conv2dWgradOutputGradientTile"
    "AccessIteratorOptimizedINS_11MatrixShapeILi128ELi32EEENS_10tfloat32_tENS_9transform29PitchLine"
    "arWarpRakedThreadMapINS_16PitchLinearShapeILi128ELi32EEELi128ENSF_ILi8ELi4EEELi4EEENS_"
    "12Aligned"
    "ArrayISC_Li4ELi16EEEEENSD_11threadblock25RegularTileAccessIteratorISB_SC_NS_6layout40ColumnMaj"
    "orTensorOpMultiplicandCongruousILi32ELi32EEELi1ESI_Li16EEELNS_4arch14CacheOperation4KindE0ENS4"
    "_48Conv2dWgradActivationTileAccessIteratorOptimizedINSA_ILi32ELi128EEESC_SI_SK_EENSN_ISW_SC_NS"
    "O_37RowMajorTensorOpMultiplicandCongruousILi32ELi32EEELi0ESI_Li16EEELSU_0ENS6_11threadblock9Mm"
    "aPolicyINS6_4warp11MmaTensorOpINS7_ILi64ELi64ELi32EEESC_SQ_SC_SZ_fNSO_8RowMajorENS13_17MmaTens"
    "orOpPolicyINSS_3MmaINS7_ILi16ELi8ELi8EEELi32ESC_S16_SC_NSO_11ColumnMajorEfS16_NSS_13OpMultiply"
    "AddEEENSA_ILi1ELi1EEEEELi1ELb0EbEENSA_ILi0ELi0EEES1G_Li1EEELi4EbEENS_8epilogue11threadblock8Ep"
    "ilogueIS8_S1F_Li1ENS1K_22PredicatedTileIteratorINS1K_26OutputTileOptimalThreadMapINS1K_"
    "15Output"
    "TileShapeILi128ELi8ELi2ELi1ELi1EEENS1O_ILi1ELi8ELi1ELi1ELi8EEELi128ELi4ELi32EEEfLb0ENSO_"
    "9NoPerm"
    "uteELb0EEENS1J_4warp24FragmentIteratorTensorOpIS15_S19_fNS_5ArrayIfLi4ELb1EEES16_EENS1U_20Tile"
    "IteratorTensorOpIS15_S19_fS16_EENS1K_18SharedLoadIteratorINS1R_18CompactedThreadMapEfLi16EEENS"
    "1J_6thread17LinearCombinationIfLi4EffLNS24_9ScaleType4KindE0ELNS_15FloatRoundStyleE2EEENSA_ILi"
    "0ELi8EEELi2ELi1EEENS11_30GemmIdentityThreadblockSwizzleILi4EEELNS1_8OperatorE2ENS1_17Conv2dPro"
    "blemSizeELNS1_9GroupModeE0EEEEEvNT_6ParamsE";
constexpr const char* kReduceSplitK =
    "void cutlass_cudnn_train::Kernel<cutlass_cudnn_train::reduction::kernel::ReduceSplitK<cutlass_"
    "cudnn_train::MatrixShape<4, 128>, cutlass_cudnn_train::epilogue::thread::LinearCombination<"
    "float, 4, float, float, (cutlass_cudnn_train::epilogue::thread::ScaleType::Kind)0, (cutlass_"
    "cudnn_train::FloatRoundStyle)2>, cutlass_cudnn_train::reduction::thread::ReduceAdd<float, "
    "float, 4>, 4> >(cutlass_cudnn_train::reduction::kernel::ReduceSplitK<cutlass_cudnn_train::"
    "MatrixShape<4, 128>, cutlass_cudnn_train::epilogue::thread::LinearCombination<float, 4, "
    "float, "
    "float, (cutlass_cudnn_train::epilogue::thread::ScaleType::Kind)0, (cutlass_cudnn_train::"
    "FloatRoundStyle)2>, cutlass_cudnn_train::reduction::thread::ReduceAdd<float, float, 4>, 4>::"
    "Params)";
// MI250 (ROCm 6.2) hipBLASLt kernel: fp32 on MFMA matrix cores.
constexpr const char* kTensileSgemmMfma =
    "Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_"
    "CLR1_"
    "CADS0_EPS0_GRVWA1_GRVWB1_GSUAMB_ISA90a_IU1_K1_LBSPPA0_LBSPPB0_LBSPPM0_LPA0_LPB0_LPM0_LRVW1_"
    "LWPMn1_MIAV0_MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NTM0_NEPBS2_NLCA1_NLCB1_ONLL1_PGR2_PLR1_"
    "PKA1_"
    "SIA3_SS1_SPO1_SRVW0_SSO0_SVW1_TLDS0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG64_4_1";
constexpr const char* kGemvx =
    "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, "
    "float, false, true, false, false, 7, cublasGemvParams<cublasGemvTensorStridedBatched<float "
    "const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
    "float> >(cublasGemvParams<cublasGemvTensorStridedBatched<float const>, "
    "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>)";
constexpr const char* kVllmCrossDeviceReduce =
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, "
    "vllm::Signal*, __nv_bfloat16*, int, int)";

// ---------------------------------------------------------------------------------------------
// gpuscope's classes.

TEST(KernelClass, NamesAreStable) {
  EXPECT_STREQ(KernelClassName(KernelClass::kCompute), "compute");
  EXPECT_STREQ(KernelClassName(KernelClass::kCommunication), "communication");
  EXPECT_STREQ(KernelClassName(KernelClass::kMemory), "memory");
  EXPECT_STREQ(KernelClassName(KernelClass::kSync), "sync");
  EXPECT_STREQ(KernelClassName(KernelClass::kOther), "other");
}

TEST(KernelClass, ActivityKindDecidesCopiesSetsAndSyncs) {
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kMemcpy, "Memcpy HtoD (Pinned -> Device)", false),
            KernelClass::kMemory);
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kMemcpy, "Memcpy DtoD (Device -> Device)", false),
            KernelClass::kMemory);
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kMemset, "Memset (Device)", false), KernelClass::kMemory);
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kSync, "Context Sync", false), KernelClass::kSync);
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kSync, "Stream Wait Event", false), KernelClass::kSync);
  // The kind wins over a name that looks like something else.
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kMemcpy, kNcclAllReduce, false), KernelClass::kMemory);
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kSync, kNcclAllReduce, true), KernelClass::kSync);
}

TEST(KernelClass, ComputeKernels) {
  for (const char* name : {kAddKernel, kCutlassS1688, kXmmaFpropTf32, kMangledCutlassConvTf32,
                           kTensileSgemmMfma, kGemvx, "volta_sgemm_128x64_nn", "triton__0d1d2d",
                           "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN"}) {
    EXPECT_EQ(ClassifyGpuActivity(GpuKind::kKernel, name, false), KernelClass::kCompute) << name;
  }
}

TEST(KernelClass, CollectiveArgsMakeAnyKernelCommunication) {
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kKernel, "my_custom_kernel(float*)", true),
            KernelClass::kCommunication);
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kKernel, "my_custom_kernel(float*)", false),
            KernelClass::kCompute);
}

struct CommCase {
  const char* name;
  const char* row;  // expected CommunicationPatterns() row
};

// One case per row at least (checked below). Names marked (illustrative) follow the library's
// naming but were not copied from a trace.
const CommCase kCommCases[] = {
    {kNcclAllReduce, "nccl"},
    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "nccl"},
    {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "nccl"},
    {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "nccl"},
    {"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", "nccl"},
    {"nccldevkernel_allreduce_sum_f32_ring_ll", "nccl"},  // lower-case spelling (HTA issue 247)
    {"rcclGenericKernel(ncclDevComm*, unsigned long, ncclWork*)", "rccl"},  // (illustrative)
    {"hcclAllReduceKernel", "hccl"},                                        // (illustrative)
    {"mscclKernel_Sum_bf16_LL(ncclDevComm*, mscclAlgo*, mscclWork*)", "msccl"},
    {"void mscclpp::allreduce8<__nv_bfloat16>(__nv_bfloat16*, int)", "msccl"},
    {"void nvshmemi_transfer_put_signal<(threadgroup_t)0>(void*, void*, unsigned long)", "nvshmem"},
    {"void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*)",
     "deep_ep::intranode"},
    {"void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*)",
     "deep_ep::intranode"},
    {"void deep_ep::internode_ll::combine<false, 7168>(void*, void*, int*, void const*)",
     "deep_ep::internode"},
    {"void deep_ep::internode::dispatch<true, 8, 2, 6144>(int4*, float*, long*)",
     "deep_ep::internode"},
    {kVllmCrossDeviceReduce, "cross_device_reduce"},
    {"void vllm::cross_device_reduce_2stage<float, 4>(vllm::RankData*, vllm::RankSignals, "
     "vllm::Signal*, float*, int, int)",
     "cross_device_reduce"},
    {"void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(tensorrt_llm::kernels::"
     "AllReduceParams)",
     "allreduce"},
    {"void c10d::intra_node_comm::twoShotAllReduceKernel<8>(at::BFloat16*, unsigned long)",
     "allreduce"},
    {"void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_"
     "bfloat16, 8>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
     "allreduce"},
    {"two_shot_all_reduce_kernel", "all_reduce"},  // torch symmetric memory (Triton)
    {"void one_shot_all_reduce_kernel<float, 16, 8>(float**, float*, unsigned long)", "all_reduce"},
    {"void allgather_kernel<8>(void**, void*, int)", "allgather"},
    {"void multimem_all_gather_kernel<16>(unsigned long*, unsigned long*, unsigned long)",
     "all_gather"},
    {"void reducescatter_kernel<__nv_bfloat16>(void**, __nv_bfloat16*, int)", "reducescatter"},
    {"void reduce_scatter_kernel<float>(float**, float*, int)", "reduce_scatter"},
    {"void alltoall_kernel<int>(int**, int*, int)", "alltoall"},
    {"void all_to_all_vdev<16>(void*, void*, long*, long*)", "all_to_all"},
    {"all2all_dispatch_kernel", "all2all"},
    {"void multimem_one_shot_reduce_kernel<float, 16, 8>(float*, float*, unsigned long)",
     "multimem_"},
    {"void userbuffers_fp16_sum_inplace_gpu_rr_rs<8>(int, int, int, int, int, void**, int)",
     "userbuffers"},
};

TEST(KernelClass, CommunicationTableRows) {
  std::set<std::string_view> hit;
  for (const CommCase& c : kCommCases) {
    EXPECT_EQ(ClassifyGpuActivity(GpuKind::kKernel, c.name, false), KernelClass::kCommunication)
        << c.name;
    const KernelNamePattern* p = MatchCommunicationPattern(c.name);
    ASSERT_NE(p, nullptr) << c.name;
    EXPECT_EQ(p->pattern, c.row) << c.name;
    hit.insert(p->pattern);
  }
  for (const KernelNamePattern& p : CommunicationPatterns()) {
    EXPECT_TRUE(hit.count(p.pattern)) << "no test case for communication row " << p.pattern;
    EXPECT_FALSE(p.note.empty()) << p.pattern;
  }
}

TEST(KernelClass, CommunicationWordsInsideOtherWordsOrTemplateArgumentsDoNotCount) {
  for (
      const char* name : {
          "void small_gather_kernel<float>(float const*, float*, int)",
          "void at::native::_scatter_gather_elementwise_kernel<128, 4, at::native::_cuda_scatter_"
          "gather_internal_kernel<true, float>::operator()<at::native::ReduceAdd>(at::"
          "TensorIterator&, long, long, long, at::native::ReduceAdd const&)::{lambda(int)#1}>(int, "
          "at::native::_cuda_scatter_gather_internal_kernel<true, float>::operator()<at::native::"
          "ReduceAdd>(at::TensorIterator&, long, long, long, at::native::ReduceAdd "
          "const&)::{lambda("
          "int)#1})",
          // A functor called WarpAllReduce in the template arguments is not a collective.
          "void softmax_warp_forward<float, WarpAllReduce<float, 32> >(float*, float const*, int)",
          "void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int const*, int const*, int*)",
      }) {
    EXPECT_EQ(ClassifyGpuActivity(GpuKind::kKernel, name, false), KernelClass::kCompute) << name;
  }
}

TEST(KernelClass, RocmBlitKernelsAreMemory) {
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kKernel, "__amd_rocclr_copyBuffer", false),
            KernelClass::kMemory);
  EXPECT_EQ(ClassifyGpuActivity(GpuKind::kKernel, "__amd_rocclr_fillBufferAligned", false),
            KernelClass::kMemory);
  EXPECT_EQ(MemoryKernelPatterns().size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// HTA's classes.

TEST(HtaKernelType, EachRegexAlternative) {
  using T = HtaKernelType;
  // COMMUNICATION: (^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)
  EXPECT_EQ(HtaKernelTypeOf(kNcclAllReduce), T::kCommunication);
  EXPECT_EQ(HtaKernelTypeOf("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage)"),
            T::kCommunication);
  EXPECT_EQ(HtaKernelTypeOf("hipLaunchKernel"), T::kCommunication);      // any "hip" name
  EXPECT_EQ(HtaKernelTypeOf("hipMemcpyWithStream"), T::kCommunication);  // even this one
  EXPECT_EQ(HtaKernelTypeOf("hcclAllReduce"), T::kCommunication);
  EXPECT_EQ(HtaKernelTypeOf("void foo<ncclKernel_x>()"), T::kCommunication);
  // MEMORY: (^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)
  EXPECT_EQ(HtaKernelTypeOf("Memcpy DtoD (Device -> Device)"), T::kMemory);
  EXPECT_EQ(HtaKernelTypeOf("Memcpy HtoD (Pinned -> Device)"), T::kMemory);
  EXPECT_EQ(HtaKernelTypeOf("Memset (Device)"), T::kMemory);
  EXPECT_EQ(HtaKernelTypeOf("dma_transfer"), T::kMemory);
  // Not COMPUTATION (inverse list) and not the above: OTHER.
  EXPECT_EQ(HtaKernelTypeOf("Context Sync"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("Event Sync"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("Stream Sync"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("Stream Wait Event"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("cudaLaunchKernel"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("cudaLaunchKernelExC"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("runFunction"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("job_exe_1"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("packet_x"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("pe_exe_x"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("cpum_exe_subgraph_3"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("collective_subgraph_execution"), T::kOther);
  EXPECT_EQ(HtaKernelTypeOf("void my_dma_kernel()"), T::kOther);     // .*dma
  EXPECT_EQ(HtaKernelTypeOf("void zeroMemsetKernel()"), T::kOther);  // .*Memset
  EXPECT_EQ(HtaKernelTypeOf("void fooSyncKernel()"), T::kOther);     // ^.*Sync
  // COMPUTATION: everything else, including collectives HTA does not know.
  EXPECT_EQ(HtaKernelTypeOf("volta_sgemm_128x64_nn"), T::kComputation);
  EXPECT_EQ(HtaKernelTypeOf(kAddKernel), T::kComputation);
  EXPECT_EQ(HtaKernelTypeOf(kVllmCrossDeviceReduce), T::kComputation);
  EXPECT_EQ(HtaKernelTypeOf("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*)"),
            T::kComputation);
  EXPECT_EQ(HtaKernelTypeOf("cuda_kernel_LaunchKernelish"), T::kOther);  // cuda.*LaunchKernel
  EXPECT_EQ(HtaKernelTypeOf("my_cuda_LaunchKernel"), T::kComputation);   // not at the start
  EXPECT_EQ(HtaKernelTypeOf(""), T::kComputation);
  // Python's '.' does not match '\n': ".*X" only looks at the first line.
  EXPECT_EQ(HtaKernelTypeOf("foo\nncclKernel"), T::kComputation);
  EXPECT_EQ(HtaKernelTypeOf("foo\nSync"), T::kComputation);
}

TEST(HtaKernelType, NamesAreStable) {
  EXPECT_STREQ(HtaKernelTypeName(HtaKernelType::kCommunication), "COMMUNICATION");
  EXPECT_STREQ(HtaKernelTypeName(HtaKernelType::kMemory), "MEMORY");
  EXPECT_STREQ(HtaKernelTypeName(HtaKernelType::kComputation), "COMPUTATION");
  EXPECT_STREQ(HtaKernelTypeName(HtaKernelType::kOther), "OTHER");
}

// RFC 4180 CSV: quoted fields may hold commas, newlines and doubled quotes.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      row.push_back(std::move(field));
      field.clear();
      rows.push_back(std::move(row));
      row.clear();
    } else {
      field.push_back(c);
    }
  }
  if (!field.empty() || !row.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

// HTA's own output: every kernel name in shared/reference/hta/*/kernel_metrics.csv with the
// kernel_type HTA gave it ("others" rows aggregate several names and are skipped).
TEST(HtaKernelType, ReproducesHtaOnReferenceKernelMetrics) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(SharedDir()) / "reference" / "hta";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    GTEST_SKIP() << "HTA reference outputs not found at " << root
                 << " (not part of the repository; set GPUSCOPE_SHARED_DIR)";
  }
  std::map<std::string, std::string> expected;  // name -> kernel_type
  size_t files = 0;
  for (const fs::directory_entry& dir : fs::directory_iterator(root)) {
    const fs::path csv = dir.path() / "kernel_metrics.csv";
    if (!fs::exists(csv)) continue;
    ++files;
    std::ifstream in(csv, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const auto rows = ParseCsv(ss.str());
    ASSERT_FALSE(rows.empty()) << csv;
    const auto& header = rows[0];
    size_t name_col = header.size(), type_col = header.size();
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == "name") name_col = i;
      if (header[i] == "kernel_type") type_col = i;
    }
    ASSERT_LT(name_col, header.size()) << csv;
    ASSERT_LT(type_col, header.size()) << csv;
    for (size_t r = 1; r < rows.size(); ++r) {
      if (rows[r].size() <= std::max(name_col, type_col)) continue;
      const std::string& name = rows[r][name_col];
      if (name == "others") continue;
      auto [it, inserted] = expected.emplace(name, rows[r][type_col]);
      EXPECT_EQ(it->second, rows[r][type_col]) << "HTA disagrees with itself on " << name;
    }
  }
  ASSERT_GT(files, 0u);
  ASSERT_GE(expected.size(), 50u) << "fewer HTA kernel names than expected";
  size_t matched = 0;
  for (const auto& [name, type] : expected) {
    EXPECT_EQ(HtaKernelTypeName(HtaKernelTypeOf(name)), type) << name;
    if (type == HtaKernelTypeName(HtaKernelTypeOf(name))) ++matched;
  }
  std::printf("HtaKernelTypeOf matched HTA on %zu of %zu distinct names in %zu CSV files\n",
              matched, expected.size(), files);
}

// ---------------------------------------------------------------------------------------------
// Short names.

TEST(ShortKernelName, StripsReturnTypeTemplatesAndArguments) {
  EXPECT_EQ(
      ShortKernelName("void at::native::vectorized_elementwise_kernel<4, at::native::"
                      "CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::"
                      "CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"),
      "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(ShortKernelName(kAddKernel), "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(ShortKernelName(kNcclAllReduce), "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(ShortKernelName(kGemvx), "internal::gemvx::kernel");  // return type dropped
  EXPECT_EQ(ShortKernelName(kVllmCrossDeviceReduce), "vllm::cross_device_reduce_1stage");
  EXPECT_EQ(ShortKernelName("void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>("
                            "cudnn::bn_fw_tr_1C11_args<float>)"),
            "cudnn::bn_fw_tr_1C11_singleread");
  // Lambdas keep their braces (as in HTA), parameter lists inside are removed.
  EXPECT_EQ(
      ShortKernelName("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_"
                      "impl<at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::"
                      "native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, at::"
                      "native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> >(at::"
                      "TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{"
                      "lambda(int)#1})"),
      "at::native::elementwise_kernel");
}

TEST(ShortKernelName, KeepsNamesThatAreNotSignatures) {
  for (const char* name :
       {"volta_sgemm_128x64_nn", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn",
        "triton_poi_fused_add_cos_sin_0", "Memcpy HtoD (Pinned -> Device)", "Memset (Device)",
        "Context Sync", "Stream Wait Event", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT",
        kMangledCutlassConvTf32, kTensileSgemmMfma, "aten::addmm",
        "autograd::engine::evaluate_function: AddmmBackward0", "ProfilerStep#3",
        "<built-in method add of Tensor object at 0x7f00>", ""}) {
    EXPECT_EQ(ShortKernelName(name), name);
  }
}

TEST(ShortKernelName, DropsAnonymousNamespaces) {
  // HTA gives "at::native::::CatArrayBatchedCopy" and "::softmax_warp_forward".
  EXPECT_EQ(
      ShortKernelName("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, "
                      "unsigned int, 1, 128, 1>(float*, at::native::(anonymous namespace)::"
                      "CatArrInputTensorMetadata<float, unsigned int, 128, 1>, at::native::("
                      "anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned "
                      "int)"),
      "at::native::CatArrayBatchedCopy");
  EXPECT_EQ(ShortKernelName("void (anonymous namespace)::softmax_warp_forward<float, float, float, "
                            "10, true>(float*, float const*, int, int, int)"),
            "softmax_warp_forward");
  EXPECT_EQ(ShortKernelName("at::cuda::(anonymous namespace)::spin_kernel(long)"),
            "at::cuda::spin_kernel");
}

TEST(ShortKernelName, LaunchWrappersKeepTheirPlainArgument) {
  EXPECT_EQ(ShortKernelName(kCutlassS1688),
            "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>");
  EXPECT_EQ(ShortKernelName(kCudnnS1688Fprop),
            "cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_128x128_16x4_"
            "nhwc_align4>");
  // A templated argument is not a name: the wrapper alone is kept (as HTA does).
  EXPECT_EQ(ShortKernelName(kReduceSplitK), "cutlass_cudnn_train::Kernel");
  EXPECT_EQ(ShortKernelName("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<"
                            "cute::tuple<int, int, int, int>, float> >(cutlass::gemm::kernel::"
                            "GemmUniversal<cute::tuple<int, int, int, int>, float>::Params)"),
            "cutlass::device_kernel");
}

TEST(ShortKernelName, OperatorsArrowsClonesAndQualifiers) {
  EXPECT_EQ(ShortKernelName("void foo<bar>(int) [clone .kd]"), "foo");
  EXPECT_EQ(ShortKernelName("void ns::Functor::operator()<int>(int) const"),
            "ns::Functor::operator()");
  // Demanglers separate "operator<" from its template arguments with a space.
  EXPECT_EQ(ShortKernelName("bool ns::operator< <int>(ns::A<int> const&, ns::A<int> const&)"),
            "ns::operator<");
  EXPECT_EQ(ShortKernelName("std::ostream& ns::operator<<(std::ostream&, ns::A const&)"),
            "ns::operator<<");
  EXPECT_EQ(ShortKernelName("void k<decltype(a->b)>(int)"), "k");
  EXPECT_EQ(ShortKernelName("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
            "enumerate#_SingleProcessDataLoaderIter.__next__");  // as HTA
  // Unbalanced closers are ignored instead of eating the name (HTA's stack would).
  EXPECT_EQ(ShortKernelName("void kernel_a(int)>"), "kernel_a");
}

// ---------------------------------------------------------------------------------------------
// Math kernels.

using P = MathPrecision;

struct MathCase {
  const char* name;
  P precision;
  bool tensor_core;
  const char* rule;
};

// Names from the shared traces unless marked: (doc) from vendor documentation or issue threads
// quoted in docs/kernel-classes.md, (illustrative) built from the documented naming scheme.
const MathCase kMathCases[] = {
    // Attention.
    {"void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 32, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 32, 4, cutlass::bfloat16_t> >, false, "
     "true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
     P::kBf16TensorCore, true, "flash-attention"},  // (illustrative)
    {"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
     "cutlass::half_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::half_t> >, false, true, "
     "false, "
     "false, true, true, false, false, false>(flash::Flash_fwd_params)",
     P::kFp16TensorCore, true, "flash-attention"},  // (illustrative)
    {"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_"
     "kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t> >(pytorch_flash::"
     "Flash_bwd_params)",
     P::kBf16TensorCore, true, "flash-attention"},  // (illustrative)
    {"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
     "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<"
     "cute::C<128>, cute::C<128>, cute::C<128> >, 128, cutlass::float_e4m3_t, float, "
     "cutlass::arch::"
     "Sm90, true, false> > > >(flash::FlashAttnFwdSm90::Params)",
     P::kFp8TensorCore, true, "flash-attention"},  // (illustrative) FA3 fp8
    {"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
     "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
     P::kTf32TensorCore, true, "xformers-fmha"},  // 3xTF32 (OpMultiplyAddFastF32)
    {"fmha_cutlassF_f32_aligned_64x64_rf_sm50(PyTorchMemEffAttention::AttentionKernel<float, "
     "cutlass::arch::Sm50, true, 64, 64, 64, true, true>::Params)",
     P::kFp32Simt, false, "xformers-fmha"},
    {"fmha_cutlassB_bf16_aligned_64x64_k128_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
     "cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, true, 64, 64, 128, false>::Params)",
     P::kBf16TensorCore, true, "xformers-fmha"},
    {"fmha_cutlassF_f16_aligned_64x64_rf_sm70", P::kFp16TensorCore, true, "xformers-fmha"},
    {"fmha_cutlassF_f16_notaligned_64x64_rf_sm50", P::kUnknown, false, "xformers-fmha"},
    {"fmha_v2_flash_attention_fp16_64_128_S_qkv_128_sm80_kernel", P::kFp16TensorCore, true,
     "fmha"},  // (illustrative) TensorRT-LLM
    // Real, from the H200 lab's bf16 autocast run (B2: its SDPA ops' inputs are BFloat16): "f16"
    // in cuDNN's name is no type.
    {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_"
     "kernel0_0",
     P::kTensorCoreUnknownType, true, "cudnn-sdpa"},
    {"void flashinfer::BatchPrefillWithRaggedKVCacheKernel<(flashinfer::MaskMode)1, 128u, 16u, "
     "__nv_bfloat16, __nv_bfloat16, int>(flashinfer::BatchPrefillRaggedParams<__nv_bfloat16, "
     "__nv_bfloat16, __nv_bfloat16, int>)",
     P::kBf16TensorCore, true, "flashinfer-prefill"},  // (illustrative)
    {"void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, "
     "__nv_bfloat16, __nv_bfloat16, int>(flashinfer::BatchDecodeParams<__nv_bfloat16>)",
     P::kUnknown, false, "flashinfer-decode"},  // (illustrative)
    {"void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, "
     "(vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*, __nv_bfloat16 "
     "const*)",
     P::kUnknown, false, "paged-attention"},  // (illustrative)
    {"void attention_kernel_batched<AttentionKernel<cutlass::half_t, cutlass::arch::Sm75, true, "
     "64, "
     "64, true, false, false, false> >(AttentionKernel<cutlass::half_t, cutlass::arch::Sm75, true, "
     "64, 64, true, false, false, false>::Params)",
     P::kUnknown, false, "attention-kernel"},  // (doc) older xformers, no unit in the name
    {"_attn_fwd", P::kUnknown, false, "attn-fwd-bwd"},
    // cuBLASLt nvjet (doc).
    {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", P::kBf16TensorCore, true, "nvjet"},
    {"nvjet_sm100_tst_64x16_64x16_2x4_2cta_h_bz_splitK_TNT", P::kBf16TensorCore, true, "nvjet"},
    {"nvjet_sm120_tst_mma_64x64x128_3_32x32x128_tmaAB_alignCD4_bz_TNNN", P::kBf16TensorCore, true,
     "nvjet"},
    {"nvjet_sm90_hss_320x128", P::kFp16TensorCore, true, "nvjet"},
    {"nvjet_hsh_64x8_64x16_4x1_v_bz_splitK_TNT", P::kFp16TensorCore, true, "nvjet"},
    {"nvjet_sm90_qqtst_128x128_128x6_1x1_h_bz_NNT", P::kTensorCoreUnknownType, true,
     "nvjet"},  // (illustrative) a type field we do not read
    // xmma.
    // Real (gpu_lab_h200 B1, PyTorch's default allow_tf32=False): ffma, CUDA cores.
    {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
     "alignc4_execute_kernel__5x_cublas",
     P::kFp32Simt, false, "xmma-f32-simt"},
    {kXmmaFpropTf32, P::kTf32TensorCore, true, "xmma"},
    {kXmmaWgradTf32, P::kTf32TensorCore, true, "xmma"},
    {"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
     "tensor16x8x16_kernel",
     P::kBf16TensorCore, true, "xmma"},
    {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_"
     "k_off_kernel__5x_cublas",
     P::kFp16TensorCore, true, "xmma"},  // (doc) TensorRT-LLM issue 1541
    {"sm90_xmma_gemm_e4m3e4m3_e4m3f32_bf16_tn_n_tilesize128x128x128_warpgroupsize1x1x1_kernel",
     P::kFp8TensorCore, true, "xmma"},  // (illustrative)
    {"sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_"
     "vect_c_32_tilesize128x128x64_stage4_warpsize2x2x1_g1_tensor16x8x32_kernel",
     P::kInt8TensorCore, true, "xmma"},  // (illustrative)
    // MMA-shape names.
    {"cutlass_tensorop_s8_i16832gemm_s8_256x128_64x3_tn_align16", P::kInt8TensorCore, true,
     "mma-int"},  // (illustrative)
    {"turing_int8_i8816gemm_int8_128x128_ldg16_nt", P::kInt8TensorCore, true, "mma-int"},
    {"volta_h884gemm_128x128_ldg8_nn", P::kFp16TensorCore, true, "mma-h884"},
    {"volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1",
     P::kFp16TensorCore, true, "mma-s884"},  // (doc) apex issue 666
    {"volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", P::kFp16TensorCore, true, "mma-s884"},
    {"cutlass_80_tensorop_d884gemm_64x32_16x5_nn_align1", P::kFp64, true, "mma-d884"},
    {"turing_h1688gemm_256x128_ldg8_tn", P::kFp16TensorCore, true, "mma-h1688-h16816"},
    {"ampere_h16816gemm_256x128_ldg8_stages_32x3_nn", P::kFp16TensorCore, true, "mma-h1688-h16816"},
    {kCutlassS1688, P::kTf32TensorCore, true, "mma-s1688"},
    {kCudnnS1688Fprop, P::kTf32TensorCore, true, "mma-s1688"},
    {"void cutlass_cudnn_train::Kernel<cutlass_tensorop_s1688wgrad_optimized_tf32_256x64_16x4_nhwc_"
     "align4>(cutlass_tensorop_s1688wgrad_optimized_tf32_256x64_16x4_nhwc_align4::Params)",
     P::kTf32TensorCore, true, "mma-s1688"},
    {"turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", P::kFp16TensorCore,
     true, "mma-s1688"},  // (doc) pytorch-gpu-benchmark issue 6
    {"cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_nn_align1", P::kBf16TensorCore, true,
     "mma-s1688"},  // (doc) CUTLASS issue 2286
    {"cutlass_80_tensorop_c1688gemm_64x64_16x4_nn_align1", P::kTf32TensorCore, true, "mma-c1688"},
    {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", P::kBf16TensorCore, true, "mma-s16816"},
    {"ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_relu_f2f_stages_64x6_tn", P::kFp16TensorCore,
     true, "mma-s16816"},  // (doc) CUTLASS issue 1025
    {"cutlass_80_tensorop_f16_s16816gemm_relu_f16_128x128_32x4_tn_align8", P::kFp16TensorCore, true,
     "mma-s16816"},  // (doc) CUTLASS issue 1025
    {"cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8", P::kBf16TensorCore,
     true, "mma-s16816"},
    // cuDNN / cuBLAS CUDA-core kernels.
    {"volta_scudnn_128x64_relu_medium_nn_v1", P::kFp32Simt, false, "cudnn-scudnn"},
    {"volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", P::kFp32Simt, false,
     "cudnn-scudnn"},
    {"cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", P::kFp32Simt, false, "cudnn-scudnn"},
    {"cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1", P::kFp32Simt, false,
     "cudnn-scudnn"},
    {"volta_fp16_scudnn_fp16_128x128_stridedB_splitK_interior_nn_v1", P::kUnknown, false,
     "cudnn-scudnn"},  // (illustrative) fp16 storage on CUDA cores
    {"maxwell_hcudnn_128x64_relu_small_nn", P::kUnknown, false, "cudnn-hcudnn"},
    {"maxwell_dcudnn_128x32_relu_interior_nn", P::kFp64, false, "cudnn-dcudnn"},
    {"volta_sgemm_128x64_nn", P::kFp32Simt, false, "sgemm"},
    {"ampere_sgemm_32x32_sliced1x4_nt", P::kFp32Simt, false, "sgemm"},
    {kCutlassSimtSgemm, P::kFp32Simt, false, "sgemm"},
    {"void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, true, true>(int, "
     "int, "
     "int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, "
     "float, float, int, float const*, float const*, bool, int, int)",
     P::kFp32Simt, false, "sgemm"},
    {"void cudnn::detail::implicit_convolve_sgemm<__half, __half, 1024, 5, 5, 3, 3, 3, 1, true, "
     "false, true>(int, int, int, __half const*, int, __half*, __half const*, kernel_conv_params, "
     "int, float, float, int, __half, __half, int, int)",
     P::kUnknown, false, "sgemm"},  // (doc) fp16 on CUDA cores
    {"void sgemm_largek_lds64<true, true, 6, 3, 4, 5, 2, 66>(float*, float const*, float const*, "
     "int, int, int, int, int, int, float const*, float const*, float, float, int, int, int*, "
     "int*)",
     P::kFp32Simt, false, "sgemm"},
    {"volta_dgemm_64x64_nn", P::kFp64, false, "dgemm"},
    {"maxwell_hgemm_256x128_nn", P::kUnknown, false, "hgemm"},
    {"void hgemm_wmma_m16n16k16_mma4x2_warp2x4_kernel(half*, half*, half*, int, int, int)",
     P::kFp16TensorCore, true, "hgemm"},  // (illustrative)
    {"ampere_gcgemm_64x64_nt", P::kFp32Simt, false, "cgemm"},
    {"volta_cgemm_32x64_tn", P::kFp32Simt, false, "cgemm"},
    {"volta_zgemm_32x32_nn", P::kFp64, false, "zgemm"},
    {"void cudnn::detail::dgrad_1x1_stride_2x2<__half, float>(float*)", P::kFp16TensorCore, true,
     "pyprof-cudnn-tc"},  // (illustrative) on PyProf's word
    {"void cudnn::cnn::wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int, int, "
     "float "
     "const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, int, "
     "int, int, int)",
     P::kFp32Simt, false, "cudnn-direct-conv"},
    {"void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, float "
     "const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, int, "
     "unsigned "
     "long long, int, float, int, int, int)",
     P::kFp32Simt, false, "cudnn-direct-conv"},
    {"void cudnn::winograd::winograd3x3Kernel<__half, float, 2, 2, 8, false>(cudnn::maxwell::"
     "winograd::KernelParams)",
     P::kUnknown, false, "winograd"},  // (doc) fp16 on CUDA cores
    {"void cudnn::winograd::winograd3x3Kernel<float, float, 4, 1, 8, false>(cudnn::maxwell::"
     "winograd::KernelParams)",
     P::kFp32Simt, false, "winograd"},
    // CUTLASS.
    {"cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_"
     "warpspecialized_cooperative_epi_tma",
     P::kBf16TensorCore, true, "cutlass-tensorop"},
    {"cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_128x128x64_2x1x1_0_ntn_align8",
     P::kFp16TensorCore, true, "cutlass-tensorop"},  // (doc) CUTLASS profiler.md
    {"cutlass_75_simt_igemm_s8_128x128_32x2_tn_align4", P::kUnknown, false, "cutlass-simt"},
    {kMangledCutlassConvTf32, P::kTf32TensorCore, true, "cutlass-template"},
    {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, "
     "int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarp"
     "SpecializedCooperative<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::"
     "KernelTmaWarpSpecializedCooperative>, cute::tuple<cute::C<128>, cute::C<256>, cute::C<64> >, "
     "cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, cutlass::bfloat16_t, float> > >("
     "cutlass::gemm::kernel::GemmUniversal::Params)",
     P::kBf16TensorCore, true, "cutlass-template"},  // (illustrative)
    {"void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaPipelined<"
     "cutlass::gemm::GemmShape<128, 128, 8>, float, cutlass::gemm::warp::MmaSimt<cutlass::gemm::"
     "GemmShape<32, 64, 8>, float> >, float> >(cutlass::gemm::kernel::Gemm::Params)",
     P::kFp32Simt, false, "cutlass-template"},  // (illustrative)
    // Other GEMM libraries.
    {"void deep_gemm::fp8_gemm_kernel<128u, 128u, 128u, 1u, 5u, 1u, (deep_gemm::GemmType)0>(__nv_"
     "bfloat16*, float*, int*, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)",
     P::kFp8TensorCore, true, "deep-gemm"},  // (illustrative)
    {"void marlin::Marlin<256, 1, 8, 8, 4, 8>(int4 const*, int4 const*, int4*, int4 const*, int, "
     "int, int, int*)",
     P::kTensorCoreUnknownType, true, "marlin"},  // (illustrative)
    {"bmm_E4m3_E4m3E4m3_Fp32_t128x64x128u2_s6_et64x64", P::kFp8TensorCore, true,
     "trtllm-gen-bmm"},  // (doc, truncated)
    {"bmm_Bfloat16_E2m1E2m1_Fp32_bA16_bB16_bC16", P::kTensorCoreUnknownType, true,
     "trtllm-gen-bmm"},  // (doc, truncated) fp4 inputs
    // ROCm.
    {kTensileSgemmMfma, P::kTensorCoreUnknownType, true, "tensile"},  // fp32 on MFMA
    {"Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1",
     P::kFp16TensorCore, true, "tensile"},  // (illustrative)
    {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_LDSB1_AFC1",
     P::kBf16TensorCore, true, "tensile"},  // (illustrative)
    {"Cijk_Ailk_Bljk_F8SS_BH_MT256x256x128_MI32x32x16x1_SN", P::kFp8TensorCore, true,
     "tensile"},  // (illustrative)
    {"Cijk_Ailk_Bljk_SB_MT64x64x8_SE_K1_TT4_4_WG16_16_1", P::kFp32Simt, false,
     "tensile"},  // (illustrative) no MI: vector ALU
    {"Cijk_Ailk_Bljk_DB_MT64x64x16_MI16x16x4x1_SN", P::kFp64, true, "tensile"},  // (illustrative)
    {"void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::tensor_layout::gemm"
     "::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::tensor_layout::gemm::RowMajor, ck::"
     "half_t, ck::half_t, ck::half_t, float>, true, (ck::InMemoryDataOperationEnum)0, 1, "
     "(ck::TailNumber)1>(ck::GridwiseGemm_xdl_cshuffle_v3::Argument)",
     P::kFp16TensorCore, true, "composable-kernel"},  // (illustrative)
    {"igemm_fwd_gtcx2_nhwc_fp16_bx0_ex1_bt256x128x32_wt32x32x8_ws2x1_wr2x2_ta1x8x2x1_1x4x1x64_"
     "tb1x8x1x1_1x4x1x64",
     P::kFp16TensorCore, true, "miopen-igemm-xdlops"},  // (illustrative)
    {"naive_conv_ab_nonpacked_fwd_nchw_float_double_float", P::kFp32Simt, false,
     "miopen-naive-conv"},
    {"naive_conv_ab_nonpacked_fwd_nhwc_half_double_half", P::kUnknown, false, "miopen-naive-conv"},
    // Triton.
    {"triton_tem_fused_addmm_relu_0", P::kUnknown, false, "triton-template"},
    {"matmul_kernel", P::kUnknown, false, "triton-matmul"},
    {"fused_moe_kernel", P::kUnknown, false, "triton-matmul"},
    // Generic rows.
    {kGemvx, P::kFp32Simt, false, "gemv"},
    {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, false, "
     "cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<"
     "float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParams<"
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float>, float>, float, float)",
     P::kFp32Simt, false, "gemv"},
    {"void sm90_wgmma_bf16_kernel<128>(__nv_bfloat16 const*, __nv_bfloat16 const*, float*)",
     P::kBf16TensorCore, true, "tc-instruction"},  // (illustrative)
    {"void gemmk1_kernel<int, float, 256, 5, false, false, false, false, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float>, float, 0>(cublasGemmk1Params<float, "
     "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
     "cublasGemvTensorStridedBatched<float>, float, biasType<cublasGemvTensorStridedBatched<float>"
     "::value_type, float>::type>)",
     P::kFp32Simt, false, "gemm"},
    {"void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<1, float, int>(at::"
     "GenericPackedTensorAccessor<float const, 4ul, at::DefaultPtrTraits, int>, at::"
     "GenericPackedTensorAccessor<float, 4ul, at::DefaultPtrTraits, int>, int, int, int)",
     P::kFp32Simt, false, "conv"},  // (illustrative)
};

TEST(MathKernel, EveryRowOfTheTable) {
  std::set<std::string_view> hit;
  for (const MathCase& c : kMathCases) {
    const MathKernelInfo info = ClassifyMathKernel(c.name);
    EXPECT_TRUE(info.is_math) << c.name;
    EXPECT_EQ(info.rule, c.rule) << c.name;
    EXPECT_EQ(MathPrecisionName(info.precision), std::string(MathPrecisionName(c.precision)))
        << c.name;
    EXPECT_EQ(info.tensor_core, c.tensor_core) << c.name;
    hit.insert(info.rule);
  }
  std::set<std::string_view> ids;
  for (const MathRule& r : MathRules()) {
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate rule id " << r.id;
    EXPECT_TRUE(hit.count(r.id)) << "no test case for math rule " << r.id;
    EXPECT_FALSE(r.note.empty()) << r.id;
    EXPECT_FALSE(r.pattern.empty()) << r.id;
  }
}

TEST(MathKernel, NotMath) {
  for (const char* name : {
           kAddKernel,
           kNcclAllReduce,
           kReduceSplitK,  // split-K reduction of a CUTLASS GEMM
           "Memcpy HtoD (Pinned -> Device)",
           "triton_poi_fused_add_cos_sin_0",
           "triton__0d1d2d3d",
           "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)",
           "void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_"
           "args<float>)",
           // cudnnConvolutionStruct in the parameters does not make im2col a convolution.
           "void cudnn::cnn::im2col4d_kernel<float, long>(cudnn::cnn::im2col4d_params, "
           "cudnnConvolutionStruct, cudnnTensor4dStruct, float const*, float*)",
           "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(cudnn::winograd_"
           "nonfused::WinogradDataParams<float, float>)",
           "void cudnn::winograd::generateWinogradTilesKernel<0, float, float>(cudnn::winograd::"
           "GenerateWinogradTilesParams<float, float>)",
           "void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int, "
           "int, "
           "int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)",
           "void fbgemm_gpu::_block_bucketize_sparse_features_cuda_kernel1<int, int>(int, int, int "
           "const*, int, int const*, int const*, int*)",
           "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, "
           "float>(long, "
           "long, float const*, float const*, float const*, float const*, float*, float*)",
           "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>("
           "cublasSplitKParams<float>, float const*, float const*, float*, float const*, float "
           "const*, float const*, float const*, float*, void*, long, float*, int*)",
           "",
       }) {
    const MathKernelInfo info = ClassifyMathKernel(name);
    EXPECT_FALSE(info.is_math) << name << " matched " << info.rule;
    EXPECT_EQ(info.precision, P::kNone) << name;
    EXPECT_FALSE(info.tensor_core) << name;
    EXPECT_TRUE(info.rule.empty()) << name;
  }
}

TEST(MathKernel, PrecisionNamesAreStable) {
  EXPECT_STREQ(MathPrecisionName(P::kNone), "none");
  EXPECT_STREQ(MathPrecisionName(P::kFp32Simt), "fp32_simt");
  EXPECT_STREQ(MathPrecisionName(P::kTf32TensorCore), "tf32_tc");
  EXPECT_STREQ(MathPrecisionName(P::kFp16TensorCore), "fp16_tc");
  EXPECT_STREQ(MathPrecisionName(P::kBf16TensorCore), "bf16_tc");
  EXPECT_STREQ(MathPrecisionName(P::kFp8TensorCore), "fp8_tc");
  EXPECT_STREQ(MathPrecisionName(P::kInt8TensorCore), "int8_tc");
  EXPECT_STREQ(MathPrecisionName(P::kTensorCoreUnknownType), "tc_unknown_type");
  EXPECT_STREQ(MathPrecisionName(P::kFp64), "fp64");
  EXPECT_STREQ(MathPrecisionName(P::kUnknown), "unknown");
}

TEST(MathKernel, TypeMarkersPutLowPrecisionFirst) {
  // The first marker in table order wins, so each lower precision must come before fp32.
  const auto markers = TypeMarkers();
  auto index_of = [&](std::string_view text) {
    for (size_t i = 0; i < markers.size(); ++i) {
      if (markers[i].text == text) return i;
    }
    return markers.size();
  };
  EXPECT_LT(index_of("e4m3"), index_of("bf16"));
  EXPECT_LT(index_of("bf16"), index_of("f16"));
  EXPECT_LT(index_of("bfloat16"), index_of("float16"));
  EXPECT_LT(index_of("tf32"), index_of("f32"));
  EXPECT_LT(index_of("tfloat32"), index_of("float"));
  EXPECT_EQ(index_of("float"), markers.size() - 1);
  EXPECT_FALSE(TensorCoreHints().empty());
}

// ---------------------------------------------------------------------------------------------
// tb_plugin's list.

TEST(TbPlugin, ListIsVerbatim) {
  const std::vector<std::string_view> expected = {"h884",
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
                                                  "c1688"};
  const auto got = TbPluginTensorCorePatterns();
  EXPECT_EQ(std::vector<std::string_view>(got.begin(), got.end()), expected);
  EXPECT_TRUE(TbPluginUsesTensorCores(kCutlassS1688));
  EXPECT_TRUE(TbPluginUsesTensorCores("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"));
  EXPECT_TRUE(TbPluginUsesTensorCores(
      "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
      "tensor16x8x16_kernel"));
  EXPECT_FALSE(TbPluginUsesTensorCores("volta_sgemm_128x64_nn"));
  EXPECT_FALSE(TbPluginUsesTensorCores("S1688"));  // case-sensitive, as in Python's `in`
}

// Where tb_plugin's substring list says "no tensor cores" but the kernel runs on them.
TEST(TbPlugin, MissesTensorCoreKernelsThatOurTableKnows) {
  for (const char* name : {
           "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT",  // cuBLASLt, Hopper
           "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 32, 4, false, false, "
           "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 32, 4, cutlass::bfloat16_t> >, "
           "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
           "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
           "int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmma"
           "WarpSpecializedCooperative<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, "
           "cutlass::gemm::KernelTmaWarpSpecializedCooperative>, cute::tuple<cute::C<128>, cute::"
           "C<256>, cute::C<64> >, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, "
           "cutlass::bfloat16_t, float> > >(cutlass::gemm::kernel::GemmUniversal::Params)",
           "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_"
           "warpspecialized_cooperative_epi_tma",
           // Real names of nccl_parser_config_A100_rank0of2: cuDNN's fprop/dgrad/wgrad xmma
           // kernels are not "xmma_implicit_gemm", and the mangled CUTLASS conv names no shape.
           kXmmaFpropTf32,
           kXmmaWgradTf32,
           kMangledCutlassConvTf32,
           // AMD matrix cores are not in the list at all.
           kTensileSgemmMfma,
       }) {
    EXPECT_FALSE(TbPluginUsesTensorCores(name)) << name;
    const MathKernelInfo info = ClassifyMathKernel(name);
    EXPECT_TRUE(info.tensor_core) << name;
  }
  // Also bf16 WMMA kernels: "s161616" contains none of tb_plugin's substrings.
  const char* wmma = "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8";
  EXPECT_FALSE(TbPluginUsesTensorCores(wmma));
  EXPECT_EQ(ClassifyMathKernel(wmma).precision, P::kBf16TensorCore);
}

// Both agree on the old fp32 kernels of the ResNet traces: CUDA cores.
TEST(TbPlugin, AgreesOnSimtKernels) {
  for (const char* name : {"volta_sgemm_128x64_nn", "volta_scudnn_128x64_relu_medium_nn_v1",
                           "ampere_sgemm_128x64_nn", kCutlassSimtSgemm}) {
    EXPECT_FALSE(TbPluginUsesTensorCores(name)) << name;
    EXPECT_FALSE(ClassifyMathKernel(name).tensor_core) << name;
    EXPECT_EQ(ClassifyMathKernel(name).precision, P::kFp32Simt) << name;
  }
}

}  // namespace
}  // namespace gpuscope::analyze

#include "tests/support/cuda/cusparse_projector.hpp"

#include <cusparse.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "tests/support/cuda/cusparse_check.hpp"

namespace slicestream::tensorcore::cuda {

using ::slicestream::cuda::DeviceBuffer;

namespace {

struct DeviceCsr {
  long long rows = 0;
  long long cols = 0;
  long long nnz = 0;
  DeviceBuffer<int> row_ptr;
  DeviceBuffer<int> col;
  DeviceBuffer<float> values;
  cusparseSpMatDescr_t descr = nullptr;

  void describe() {
    SLICESTREAM_CUSPARSE_CHECK(cusparseCreateCsr(
        &descr, rows, cols, nnz, row_ptr.data(), col.data(), values.data(), CUSPARSE_INDEX_32I,
        CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  }
  ~DeviceCsr() {
    if (descr != nullptr) cusparseDestroySpMat(descr);
  }
  std::size_t bytes() const { return row_ptr.bytes() + col.bytes() + values.bytes(); }
};

// Descriptors, buffer and algorithm of one product (matrix, column count).
struct ProductPlan {
  cusparseDnMatDescr_t in = nullptr;
  cusparseDnMatDescr_t out = nullptr;
  cusparseDnVecDescr_t in_vec = nullptr;
  cusparseDnVecDescr_t out_vec = nullptr;
  DeviceBuffer<unsigned char> buffer;
  cusparseSpMMAlg_t algorithm = CUSPARSE_SPMM_CSR_ALG3;
  ~ProductPlan() {
    if (in != nullptr) cusparseDestroyDnMat(in);
    if (out != nullptr) cusparseDestroyDnMat(out);
    if (in_vec != nullptr) cusparseDestroyDnVec(in_vec);
    if (out_vec != nullptr) cusparseDestroyDnVec(out_vec);
  }
};

const char* algorithm_name(cusparseSpMMAlg_t a) {
  switch (a) {
    case CUSPARSE_SPMM_CSR_ALG3:
      return "CSR_ALG3";
    case CUSPARSE_SPMM_CSR_ALG2:
      return "CSR_ALG2";
    default:
      return "ALG_DEFAULT";
  }
}

}  // namespace

struct CusparseProjector::Impl {
  cusparseHandle_t handle = nullptr;
  DeviceCsr a;
  DeviceCsr at;
  std::map<std::pair<bool, int>, std::unique_ptr<ProductPlan>> plans;  // (transposed, columns)
  // What each direction ran with, for several right-hand sides and for one.
  std::string spmm_algorithm[2] = {"not run", "not run"};
  std::string spmv_algorithm[2] = {"not run", "not run"};

  ~Impl() {
    plans.clear();
    if (handle != nullptr) cusparseDestroy(handle);
  }

  void multiply(DeviceCsr& m, bool transposed, const float* in, float* out, int columns,
                cudaStream_t stream);
};

void CusparseProjector::Impl::multiply(DeviceCsr& m, bool transposed, const float* in, float* out,
                                       int columns, cudaStream_t stream) {
  SLICESTREAM_CUSPARSE_CHECK(cusparseSetStream(handle, stream));
  const float alpha = 1.0f;
  const float beta = 0.0f;
  std::unique_ptr<ProductPlan>& plan = plans[{transposed, columns}];
  const int direction = transposed ? 1 : 0;
  if (columns == 1) {
    if (plan == nullptr) {
      plan = std::make_unique<ProductPlan>();
      SLICESTREAM_CUSPARSE_CHECK(
          cusparseCreateDnVec(&plan->in_vec, m.cols, const_cast<float*>(in), CUDA_R_32F));
      SLICESTREAM_CUSPARSE_CHECK(cusparseCreateDnVec(&plan->out_vec, m.rows, out, CUDA_R_32F));
      std::size_t size = 0;
      SLICESTREAM_CUSPARSE_CHECK(cusparseSpMV_bufferSize(
          handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, m.descr, plan->in_vec, &beta,
          plan->out_vec, CUDA_R_32F, CUSPARSE_SPMV_CSR_ALG1, &size));
      plan->buffer.resize(size > 0 ? size : 1);
    }
    SLICESTREAM_CUSPARSE_CHECK(cusparseDnVecSetValues(plan->in_vec, const_cast<float*>(in)));
    SLICESTREAM_CUSPARSE_CHECK(cusparseDnVecSetValues(plan->out_vec, out));
    SLICESTREAM_CUSPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                            m.descr, plan->in_vec, &beta, plan->out_vec, CUDA_R_32F,
                                            CUSPARSE_SPMV_CSR_ALG1, plan->buffer.data()));
    spmv_algorithm[direction] = "SpMV CSR_ALG1";
    return;
  }
  if (plan == nullptr) {
    plan = std::make_unique<ProductPlan>();
    SLICESTREAM_CUSPARSE_CHECK(cusparseCreateDnMat(&plan->in, m.cols, columns, columns,
                                                   const_cast<float*>(in), CUDA_R_32F,
                                                   CUSPARSE_ORDER_ROW));
    SLICESTREAM_CUSPARSE_CHECK(cusparseCreateDnMat(&plan->out, m.rows, columns, columns, out,
                                                   CUDA_R_32F, CUSPARSE_ORDER_ROW));
    cusparseStatus_t status = CUSPARSE_STATUS_NOT_SUPPORTED;
    std::size_t size = 0;
    for (cusparseSpMMAlg_t algorithm :
         {CUSPARSE_SPMM_CSR_ALG3, CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_SPMM_ALG_DEFAULT}) {
      status = cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, m.descr, plan->in,
                                       &beta, plan->out, CUDA_R_32F, algorithm, &size);
      if (status != CUSPARSE_STATUS_SUCCESS) continue;
      plan->buffer.resize(size > 0 ? size : 1);
      status = cusparseSpMM_preprocess(
          handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
          m.descr, plan->in, &beta, plan->out, CUDA_R_32F, algorithm, plan->buffer.data());
      if (status == CUSPARSE_STATUS_SUCCESS) {
        plan->algorithm = algorithm;
        break;
      }
    }
    check_cusparse(status, "cusparseSpMM set-up (ALG3, ALG2 and the default all refused)", __FILE__,
                   __LINE__);
  }
  SLICESTREAM_CUSPARSE_CHECK(cusparseDnMatSetValues(plan->in, const_cast<float*>(in)));
  SLICESTREAM_CUSPARSE_CHECK(cusparseDnMatSetValues(plan->out, out));
  SLICESTREAM_CUSPARSE_CHECK(cusparseSpMM(
      handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, m.descr,
      plan->in, &beta, plan->out, CUDA_R_32F, plan->algorithm, plan->buffer.data()));
  spmm_algorithm[direction] = std::string("SpMM ") + algorithm_name(plan->algorithm) + " row-major";
}

CusparseProjector::CusparseProjector(const CsrMatrix& a) : impl_(std::make_unique<Impl>()) {
  if (a.nnz() > 0x7fffffffLL || a.rows > 0x7fffffffLL || a.cols > 0x7fffffffLL) {
    throw std::invalid_argument("cuSPARSE baseline: sizes need 32-bit indices");
  }
  Impl& d = *impl_;
  SLICESTREAM_CUSPARSE_CHECK(cusparseCreate(&d.handle));
  d.a.rows = a.rows;
  d.a.cols = a.cols;
  d.a.nnz = a.nnz();
  std::vector<int> row_ptr(a.row_ptr.begin(), a.row_ptr.end());
  d.a.row_ptr.upload(row_ptr);
  d.a.col.upload(a.col);
  d.a.values.upload(a.values);
  d.a.describe();

  // A^T = CSC of A, built on the GPU.
  d.at.rows = a.cols;
  d.at.cols = a.rows;
  d.at.nnz = a.nnz();
  d.at.row_ptr.resize(static_cast<std::size_t>(a.cols) + 1);
  d.at.col.resize(static_cast<std::size_t>(a.nnz()));
  d.at.values.resize(static_cast<std::size_t>(a.nnz()));
  std::size_t size = 0;
  SLICESTREAM_CUSPARSE_CHECK(cusparseCsr2cscEx2_bufferSize(
      d.handle, static_cast<int>(a.rows), static_cast<int>(a.cols), static_cast<int>(a.nnz()),
      d.a.values.data(), d.a.row_ptr.data(), d.a.col.data(), d.at.values.data(),
      d.at.row_ptr.data(), d.at.col.data(), CUDA_R_32F, CUSPARSE_ACTION_NUMERIC,
      CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, &size));
  DeviceBuffer<unsigned char> buffer(size > 0 ? size : 1);
  SLICESTREAM_CUSPARSE_CHECK(cusparseCsr2cscEx2(
      d.handle, static_cast<int>(a.rows), static_cast<int>(a.cols), static_cast<int>(a.nnz()),
      d.a.values.data(), d.a.row_ptr.data(), d.a.col.data(), d.at.values.data(),
      d.at.row_ptr.data(), d.at.col.data(), CUDA_R_32F, CUSPARSE_ACTION_NUMERIC,
      CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, buffer.data()));
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  d.at.describe();
}

CusparseProjector::~CusparseProjector() = default;

long long CusparseProjector::rays() const {
  return impl_->a.rows;
}
long long CusparseProjector::pixels() const {
  return impl_->a.cols;
}
std::size_t CusparseProjector::matrix_device_bytes() const {
  return impl_->a.bytes();
}

std::string CusparseProjector::configuration() const {
  const Impl& d = *impl_;
  return "CSR fp32, 32-bit indices; A.X: " + d.spmm_algorithm[0] + ", " + d.spmv_algorithm[0] +
         "; A^T.Y (A^T stored as CSR via csr2csc): " + d.spmm_algorithm[1] + ", " +
         d.spmv_algorithm[1] + "; SpMM preprocessed once per column count";
}

void CusparseProjector::forward(const float* image, float* sinogram, int columns,
                                cudaStream_t stream, const float*) {
  if (columns <= 0) throw std::invalid_argument("cuSPARSE forward: need at least one column");
  impl_->multiply(impl_->a, false, image, sinogram, columns, stream);
}

void CusparseProjector::backward(const float* sinogram, float* image, int columns,
                                 cudaStream_t stream, const float*) {
  if (columns <= 0) throw std::invalid_argument("cuSPARSE backward: need at least one column");
  impl_->multiply(impl_->at, true, sinogram, image, columns, stream);
}

}  // namespace slicestream::tensorcore::cuda

// The expression layer in one include (host and device). Host loops:
// kernels/expr/host_evaluate.hpp.
#pragma once

#include "kernels/expr/expression.hpp"
#include "kernels/expr/functors.hpp"
#include "kernels/expr/index.hpp"
#include "kernels/expr/math.hpp"
#include "kernels/expr/operators.hpp"
#include "kernels/expr/pass.hpp"

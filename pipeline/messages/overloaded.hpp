// std::visit with a set of lambdas: std::visit(Overloaded{[](A&) {...}, [](B&) {...}}, v).
#pragma once

namespace slicestream {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace slicestream

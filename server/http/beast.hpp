// Boost.Beast and Boost.Asio for the HTTP endpoint, with the namespace aliases its files use.
#pragma once

// Boost.Asio 1.74's scheduler trips GCC 12's -Wnull-dereference once inlined (a false positive in
// library code, as in server/main.cpp); silenced for these headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#pragma GCC diagnostic pop

namespace slicestream {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = boost::asio::ip::tcp;
}  // namespace slicestream

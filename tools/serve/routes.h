// ordo serve's answers on a Server (connection.h): the eight POST endpoints, GET /health and GET /,
// and a JSON error for what httplib refuses itself. cmd_serve installs them before it listens;
// fuzz/fuzz_serve.cpp installs them on a server that serves byte streams through a socket pair.
#pragma once

#include <string>

#include "tools/serve/connection.h"
#include "tools/serve/service.h"

namespace ordo::serve {

// `service`, `settings` and `page` must outlive the server. A body past `max_body` bytes is 413.
void install_routes(Server& server, Service& service, const Settings& settings, const std::string& page, long max_body);

}  // namespace ordo::serve

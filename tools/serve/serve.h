// ordo serve: the HTTP server (its own target, ordo_serve, and namespace), run as `ordo serve`.
#pragma once

namespace ordo::serve {

// `ordo serve ...`: argc and argv from "serve" on; returns the exit status.
int cmd_serve(int argc, char** argv);

}  // namespace ordo::serve

// Where the other nodes of a gang reach this machine (docs/api.md, "The worker protocol"): the
// address the worker registers (capabilities.address, jobctl-worker --address) and a TCP port free
// on it, sent with every lease request (the gang's master port when this worker becomes rank 0).
//
// The port is free when it is found and closed again at once: another process may take it before
// the job's program binds it. Nothing can close that window from outside the program; a rank 0
// program that cannot bind it fails, and the gang is restarted with a new one.
//
// Thread safety: pure functions (they open and close sockets of their own).
#pragma once

#include <string>
#include <string_view>

#include "base/expected.h"

namespace jobctl::worker {

// A host name or IP address as --address takes it: not empty, at most 255 bytes, no spaces or
// commas (the gang's addresses travel comma-separated, JOBCTL_NODE_ADDRS). invalid_argument
// naming the field "address" otherwise.
Status check_rendezvous_address(std::string_view address);

// The local IP address this machine's connections toward `server_url`'s host leave from (a UDP
// socket connected there, so no packet is sent): 127.0.0.1 toward a daemon on loopback. Errors:
// invalid_argument (not an http(s) URL), unavailable (the host does not resolve, or no route).
Expected<std::string> local_address_toward(const std::string& server_url);

// A TCP port free on `address` (a host name or IP of this machine) right now: bound as port 0 and
// closed. Errors: unavailable (the address does not resolve), io (it cannot be bound: not one of
// this machine's, say), each message naming the address.
Expected<int> free_tcp_port(const std::string& address);

}  // namespace jobctl::worker

/** host_netns_inspect's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/host-netns-inspect.ts). */
import { defineSkillMeta } from "../define.ts";

export const HOST_NETNS_INSPECT = defineSkillMeta({
  key: "host_netns_inspect",
  name: "Inspect network namespaces",
  description:
    "List the host's named network namespaces (ip netns) with each namespace's interfaces (state, MTU, MAC, addresses) and IPv4/IPv6 routes. Use when diagnosing container, CNI or VRF networking: a pod or VPN namespace that cannot reach its gateway, a missing route, a veth that is down.",
  class: "safe",
  scope: "host",
  category: "network",
  params: {
    namespace: {
      type: "string",
      description: "Only this namespace (a name from `ip netns list`); all named namespaces when omitted.",
      pattern: "^[A-Za-z0-9_][A-Za-z0-9_.-]*$",
      max: 255,
    },
  },
  resultPreview: JSON.stringify({
    namespaces: [
      {
        name: "blue",
        id: 0,
        interfaces: [{ name: "veth-blue", state: "UP", flags: ["BROADCAST", "UP", "LOWER_UP"], mtu: 1500, mac: "9a:1e:03:5c:2b:11", addresses: ["10.200.1.2/24"], peer: "veth-host" }],
        routes: [{ family: "inet", dst: "default", gateway: "10.200.1.1", dev: "veth-blue", protocol: "static", scope: null }],
      },
    ],
    count: 1,
    total: 1,
  }),
});

/** host_files's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/host-files.ts). */
import { defineSkillMeta } from "../define.ts";

export const HOST_FILES = defineSkillMeta({
  key: "host_files",
  name: "Disk usage",
  description:
    "Report disk usage: without path, every real filesystem's size, used and available bytes, use % and inode use %, fullest first; with path (inside the configured allowed roots), the largest files and directories under it, like du. Use when a disk is filling up or a write fails with ENOSPC, to find which filesystem and then which directory is responsible.",
  class: "safe",
  scope: "host",
  category: "host",
  params: {
    path: { type: "string", description: "Absolute directory to measure, inside the edge's allowed roots; omit to list filesystems.", pattern: "^/[^\\u0000]*$", max: 4096 },
    depth: { type: "integer", description: "How many directory levels below path to list (0 = only the total).", min: 0, max: 3, default: 1 },
    limit: { type: "integer", description: "How many filesystems or entries to return, largest first.", min: 1, max: 200, default: 20 },
    all_filesystems: { type: "boolean", description: "Also list pseudo filesystems (proc, sysfs, cgroup, tmpfs, squashfs, …) and bind mounts.", default: false },
  },
  resultPreview: JSON.stringify({
    filesystems: [{ mount: "/", device: "/dev/vda1", fs_type: "ext4", read_only: false, size_bytes: 270_549_000_192, used_bytes: 24_696_061_952, avail_bytes: 232_080_334_848, used_pct: 9.6, inodes_used_pct: 2.6 }],
    total: 1,
  }),
});

/** Destroyers of storage (A6): filesystem creation and wipes, partitioning, raw device writes, encryption formats, volume removal. */
import { firstSystemPath, hasShort, operands, type DangerRule } from "./common.ts";

const FORMATTERS = /^(mkfs(\..+)?|mke2fs|mkswap|mkdosfs|mkntfs|mkexfatfs|mkreiserfs|mkudffs|wipefs|fdisk|sfdisk|cfdisk|gdisk|sgdisk|parted|partprobe|blkdiscard|shred|badblocks|hdparm|sdparm|nvme|zpool|zfs|lvremove|vgremove|pvremove|lvreduce|mdadm|dmsetup|e2fsck|fsck(\..+)?|tune2fs|resize2fs|debugfs|xfs_repair|btrfs|losetup|swapoff|quotaoff|cryptsetup|mkfs)$/;
/** Read-only forms of the tools above. */
const READ_FORMS: Record<string, RegExp> = {
  cryptsetup: /^(status|luksDump|isLuks|tcryptDump|benchmark)$/,
  zpool: /^(list|status|iostat|get|history)$/,
  zfs: /^(list|get)$/,
  btrfs: /^(filesystem|fi)$/,
  nvme: /^(list|smart-log|id-ctrl|id-ns|error-log)$/,
  mdadm: /^(--detail|-D|--examine|-E|--query|-Q)$/,
  dmsetup: /^(ls|info|status|table)$/,
  losetup: /^(-a|--all|-l|--list|-j)$/,
  parted: /^(-l|--list)$/,
  fdisk: /^(-l|--list)$/,
  sfdisk: /^(-l|--list|-d|--dump)$/,
  hdparm: /^-[iI]$/,
};

/** Storage destroyers. */
export const storageRule: DangerRule = (call) => {
  const { name } = call;
  if (FORMATTERS.test(name)) {
    const read = READ_FORMS[name];
    if (read && call.args.length > 0 && call.args.every((w) => !w.dynamic) && read.test(call.args.find((w) => read.test(w.value))?.value ?? "") && !hasShort(call, name === "fdisk" || name === "sfdisk" ? "w" : "")) {
      return undefined;
    }
    return `${name} formats, partitions, wipes or rewrites storage`;
  }
  if (name === "dd") {
    const of = call.args.find((w) => w.dynamic || w.value.startsWith("of="));
    if (!of) return undefined;
    if (of.dynamic) return "dd writes to a target only known at run time";
    const why = firstSystemPath([{ ...of, value: of.value.slice(3) }]);
    return why ? `dd writes to ${why}` : undefined;
  }
  if (name === "truncate" || name === "fallocate") return firstSystemPath(operands(call));
  return undefined;
};

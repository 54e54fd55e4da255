"""Code bundles, packed as `jobctl submit --workdir` packs them (bundle/code_bundle.h; docs/job-protocol.md,
"Code bundles"): the same bytes for the same folder.

  header, 40 bytes: magic "JCBUNDL1" | u64 payload bytes | u64 unpacked bytes | u32 entries |
                    u32 CRC32C of the payload | u64 reserved (0)
  payload: a zlib stream (level 6) of the entries sorted by path, each
    u8 type ('d', 'f', 'l') | u8 mode (1: executable) | u16 path bytes | u32 reserved (0) |
    u64 data bytes | path (relative, '/'-separated) | data (file bytes, or the link's target)

Every `.git` folder is left out; a link out of the folder and special files are refused, as the CLI
refuses them (the worker would refuse them when unpacking).
"""

import os
import stat
import struct
import zlib

from jobctl_client.crc32c import crc32c
from jobctl_client.errors import ApiError

MAX_PACKED_INPUT = 100 << 20  # the CLI's --workdir-limit-mb default


def _refuse(message: str) -> ApiError:
    return ApiError(0, "invalid_argument", message, "workdir")


def _link_stays_inside(link_path: str, target: str) -> bool:
    if not target or target.startswith("/"):
        return False
    stack = link_path.split("/")[:-1]
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return False
            stack.pop()
        else:
            stack.append(part)
    return True


def pack_directory(directory: str, max_input_bytes: int = MAX_PACKED_INPUT) -> bytes:
    """The bundle of `directory`'s files, folders and links. Raises ApiError (field "workdir")."""
    if not os.path.isdir(directory) or os.path.islink(directory):
        raise _refuse(f"--workdir {directory} is not a folder")
    entries = []
    total = 0
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in sorted(dirs) + sorted(f for f in files if f != ".git"):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, directory).replace(os.sep, "/")
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(full)
                if not _link_stays_inside(rel, target):
                    raise _refuse(f"{rel} is a link out of {directory} (to {target}); bundles carry only links inside")
                entries.append((b"l", 0, rel, target.encode()))
            elif stat.S_ISDIR(st.st_mode):
                entries.append((b"d", 0, rel, b""))
            elif stat.S_ISREG(st.st_mode):
                total += st.st_size
                if total > max_input_bytes:
                    raise _refuse(f"{directory} holds more than {max_input_bytes >> 20} MiB of files (the bundle limit);"
                                  " leave data out of the code folder")
                with open(full, "rb") as f:
                    data = f.read()
                entries.append((b"f", 1 if st.st_mode & stat.S_IXUSR else 0, rel, data))
            else:
                raise _refuse(f"{rel} is not a file, folder or link (a device, FIFO or socket): bundles refuse it")
    # A link to a folder is listed among os.walk's dirs; it is a link entry, never followed (the
    # walk does not follow links by default).
    entries.sort(key=lambda e: e[2].encode())
    raw = bytearray()
    for kind, mode, path, data in entries:
        p = path.encode()
        raw += kind + struct.pack("<BHIQ", mode, len(p), 0, len(data)) + p + data
    packed = zlib.compress(bytes(raw), 6)
    header = b"JCBUNDL1" + struct.pack("<QQIIQ", len(packed), len(raw), len(entries), crc32c(packed), 0)
    return header + packed

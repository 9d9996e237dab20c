"""A file system that does not answer until released: a stand-in for an NFS server that stopped answering.

Usage (as root): hanging_fs.py BACKING_DIRECTORY MOUNTPOINT RELEASE_FIFO [WRITES_HANG_PAST_BYTES]
Everything passes through to BACKING_DIRECTORY (files created are given to the caller) but what hangs: without
WRITES_HANG_PAST_BYTES every statfs waits until a line is written to RELEASE_FIFO, and from then on answers at once
(1 MiB free of 4 MiB); with it, a write that reaches past that many bytes of its file waits so.
"""
import errno
import os
import sys
import threading

import fuse

fuse.fuse_python_api = (0, 2)
released = threading.Event()
writes_hang_past = int(sys.argv[4]) if len(sys.argv) > 4 else None


def wait_for_release(fifo):
    with open(fifo) as release:
        release.readline()
    released.set()


def caller():
    context = fuse.FuseGetContext()
    return context["uid"], context["gid"]


class HangingFS(fuse.Fuse):
    def __init__(self, backing, *args, **kwargs):
        super().__init__(*args, **kwargs)
        real = self.real = lambda path: backing + path

        class File:
            def __init__(self, path, flags, *mode):
                self.fd = os.open(real(path), flags, *mode)
                if flags & os.O_CREAT:
                    os.fchown(self.fd, *caller())

            def read(self, length, offset):
                return os.pread(self.fd, length, offset)

            def write(self, data, offset):
                if writes_hang_past is not None and offset + len(data) > writes_hang_past:
                    if not released.is_set():
                        print(f"write hangs at {offset}", flush=True)
                    released.wait()
                return os.pwrite(self.fd, data, offset)

            def fgetattr(self):
                return os.fstat(self.fd)

            def ftruncate(self, length):
                os.ftruncate(self.fd, length)

            def fsync(self, datasync):
                os.fsync(self.fd)

            def flush(self):
                return 0

            def release(self, flags):
                os.close(self.fd)

        self.file_class = File

    def getattr(self, path):
        return os.lstat(self.real(path))

    def readdir(self, path, offset):
        for name in [".", ".."] + os.listdir(self.real(path)):
            yield fuse.Direntry(name)

    def mkdir(self, path, mode):
        os.mkdir(self.real(path), mode)
        os.chown(self.real(path), *caller())

    def rmdir(self, path):
        os.rmdir(self.real(path))

    def unlink(self, path):
        os.unlink(self.real(path))

    def rename(self, old, new):
        os.rename(self.real(old), self.real(new))

    def truncate(self, path, length):
        os.truncate(self.real(path), length)

    def chmod(self, path, mode):
        os.chmod(self.real(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self.real(path), uid, gid)

    def utimens(self, path, accessed, modified):
        os.utime(self.real(path), ns=(accessed.tv_sec * 10**9 + accessed.tv_nsec, modified.tv_sec * 10**9 + modified.tv_nsec))

    def statfs(self):
        if writes_hang_past is None:
            released.wait()
        answer = fuse.StatVfs()
        answer.f_bsize = answer.f_frsize = 4096
        answer.f_blocks = 1024
        answer.f_bfree = answer.f_bavail = 256
        answer.f_files = answer.f_ffree = 100
        answer.f_namemax = 255
        return answer


def main():
    backing, mountpoint, fifo = sys.argv[1:4]
    del sys.argv[4:]
    threading.Thread(target=wait_for_release, args=(fifo,), daemon=True).start()
    server = HangingFS(backing, dash_s_do="setsingle")
    server.parse([sys.argv[0], mountpoint, "-f", "-o", "allow_other,default_permissions"])
    server.multithreaded = True
    server.main()


if __name__ == "__main__":
    main()

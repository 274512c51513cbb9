#!/usr/bin/env python3
"""doctor_peer.py - other parties on dist-train-doctor's port, for doctor_auth.bats.

    doctor_peer.py free-port
    doctor_peer.py forge PORT RANK          a record claiming RANK: the old plain
                                            one, then one signed with a wrong key
    doctor_peer.py churn PORT KEEP SECONDS  for SECONDS (or until killed), connect to
                                            PORT again and again, keeping the newest KEEP
                                            connections open; prints "churn: started",
                                            waits for SIGUSR1, and at the end prints
                                            how many it made
    doctor_peer.py idle PORT N SECONDS [READY]
                                            N connections that send nothing; prints
                                            how many rank 0 closed, and after how long;
                                            creates the file READY once all N are open
    doctor_peer.py flood PORT KEY N NODE    N records of ranks 1..N, all claiming NODE,
                                            signed with KEY (the protocol rank 0 speaks)
    doctor_peer.py hold PORT KEY N SECS     N signed records on connections kept open
                                            for SECS
    doctor_peer.py impostor PORT SECS       listen on PORT for one connection (at most
                                            SECS), answer "ok" to all it says, and print
                                            what it sent
    doctor_peer.py cpu FILE CMD...          run CMD; its CPU seconds (user + system)
                                            into FILE; CMD's exit status

The handshake is written here from tools/doctor/auth.h's description, apart from
the C code: a rank that speaks it from this file checks both.
"""
import hashlib
import hmac
import os
import resource
import select
import socket
import sys
import time

MAGIC = "dist-train-doctor"


def connect(port, deadline):
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def mac(key, text):
    return hmac.new(bytes.fromhex(key), text, hashlib.sha256).hexdigest()


def record(rank, world, node):
    lines = [MAGIC + " 1", f"procid={rank}", f"rank={rank}", f"local_rank={rank % 1024}",
             f"world_size={world}", f"node={node}", "master_addr=127.0.0.1",
             "cpus=0-1", "plan_cpus=0-1", "end"]
    return ("\n".join(lines) + "\n").encode()


def read_line(s, limit=200):
    buf = b""
    while not buf.endswith(b"\n") and len(buf) < limit:
        part = s.recv(1)
        if not part:
            break
        buf += part
    return buf


def signed(s, key, rec, forger=False):
    """The rank's side of the handshake; False when rank 0 does not answer
    it (a server that does not speak it).  A forger sends its record
    whatever the proof says."""
    pn = os.urandom(16).hex()
    s.sendall(f"{MAGIC} 3 hello {pn} {mac(key, f'{MAGIC} hello {pn}'.encode())}\n".encode())
    s.settimeout(0.5)
    try:
        line = read_line(s).decode()
    except socket.timeout:
        return False
    s.settimeout(5)
    words = line.split()
    if len(words) != 5:
        return False
    sn = words[3]
    if not forger and words[4] != mac(key, f"{MAGIC} rank0 {pn} {sn}".encode()):
        sys.exit(f"doctor_peer: rank 0's proof is wrong: {line!r}")
    head = f"{MAGIC} record {sn} {pn}\n".encode()
    s.sendall(f"record {len(rec)} {mac(key, head + rec)}\n".encode() + rec)
    return True


def forge(port, rank):
    deadline = time.monotonic() + 10
    # what anyone could send to the old doctor
    with connect(port, deadline) as s:
        s.sendall(record(rank, 2, "forged"))
        time.sleep(0.2)
    # the new handshake, with a key of our own
    with connect(port, deadline) as s:
        if not signed(s, os.urandom(32).hex(), record(rank, 2, "forged"), forger=True):
            print("forge: no proof from rank 0")
        time.sleep(0.2)
    print("forge: sent")


def idle(port, n, seconds, ready=None):
    deadline = time.monotonic() + 10
    start = time.monotonic()
    socks = [connect(port, deadline) for _ in range(n)]
    if ready:
        open(ready, "w").close()
    closed_after = []
    open_ = {s.fileno(): s for s in socks}
    while open_ and time.monotonic() - start < seconds:
        ready, _, _ = select.select(list(open_), [], [], 0.1)
        for fd in ready:
            try:
                data = open_[fd].recv(512)
            except OSError:
                data = b""
            if not data:
                closed_after.append(time.monotonic() - start)
                open_.pop(fd).close()
    print(f"idle: {len(closed_after)} of {n} closed by rank 0"
          + (f", the first after {min(closed_after):.1f} s" if closed_after else ""))
    for s in open_.values():
        s.close()


def churn(port, keep, seconds):
    """A stranger's flood: connections that never say a word, made as fast
    as the kernel takes them, the oldest closed once KEEP are open (holding
    them is what fills rank 0's table; closing them would free it)."""
    import collections
    import signal
    end = time.monotonic() + seconds
    held = collections.deque()
    made = 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # The strangers churn together, once all have started: a stranger who
    # started churning at the lowest priority would take the CPU from the
    # next one's start, which then took minutes on a loaded machine.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    # (to stdout, which the test opened: this user may write nowhere else)
    print("churn: started", flush=True)
    signal.sigwait({signal.SIGUSR1})
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            except OSError:
                # nobody listens (between two rank 0s): a pause, not a spin
                s.close()
                time.sleep(0.01)
                continue
            held.append(s)
            made += 1
            if len(held) > keep:
                held.popleft().close()
    finally:
        print(f"churn: {made} connections made", flush=True)


SPEAKS = None  # whether rank 0 answers the handshake, from the first connection


def send_record(port, key, rec, deadline):
    """One rank's record, signed when rank 0 speaks the handshake and plain
    when it does not; the connection, open."""
    global SPEAKS
    s = connect(port, deadline)
    if SPEAKS is None:
        SPEAKS = signed(s, key, rec)
        if not SPEAKS:
            print("rank 0 speaks the old protocol: plain records")
            s.close()
            s = connect(port, deadline)
    elif SPEAKS:
        signed(s, key, rec)
    if not SPEAKS:
        s.sendall(rec)
    return s


def flood(port, key, n, node):
    deadline = time.monotonic() + 10
    for rank in range(1, n + 1):
        send_record(port, key, record(rank, n + 1, node), deadline).close()
    print(f"flood: {n} records sent")


def hold(port, key, n, seconds):
    socks = []
    deadline = time.monotonic() + seconds
    for rank in range(1, n + 1):
        try:
            socks.append(send_record(port, key, record(rank, n + 1, "node1"), deadline))
        except OSError:
            break
    print(f"hold: {len(socks)} records sent")
    time.sleep(max(0, deadline - time.monotonic()))


def impostor(port, seconds):
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(64)
    got = b""
    end = time.monotonic() + seconds
    print("impostor: listening", file=sys.stderr, flush=True)
    while time.monotonic() < end:
        ready, _, _ = select.select([lsock], [], [], 0.1)
        if not ready:
            continue
        conn, _ = lsock.accept()
        end = 0  # (one connection is all a test needs)
        conn.settimeout(1)
        try:
            got += conn.recv(65536)
            conn.sendall(b"ok\n")
            # what a rank sends once it believes us
            got += conn.recv(65536)
            conn.sendall(b"ok\n")
            got += conn.recv(65536)
        except OSError:
            pass
        conn.close()
    # (to stdout, which the test opened: this user may write nowhere else)
    sys.stdout.buffer.write(got)


def main():
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1:] * 2)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "free-port":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            print(s.getsockname()[1])
    elif cmd == "forge":
        forge(int(args[0]), int(args[1]))
    elif cmd == "churn":
        churn(int(args[0]), int(args[1]), float(args[2]))
    elif cmd == "idle":
        idle(int(args[0]), int(args[1]), float(args[2]), *args[3:4])
    elif cmd == "flood":
        flood(int(args[0]), args[1], int(args[2]), args[3])
    elif cmd == "hold":
        hold(int(args[0]), args[1], int(args[2]), float(args[3]))
    elif cmd == "cpu":
        import subprocess
        rc = subprocess.run(args[1:]).returncode
        use = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(args[0], "w") as f:
            f.write(f"{use.ru_utime + use.ru_stime:.2f}\n")
        sys.exit(rc)
    elif cmd == "impostor":
        impostor(int(args[0]), float(args[1]))
    else:
        sys.exit(f"doctor_peer: unknown command {cmd}")


if __name__ == "__main__":
    main()

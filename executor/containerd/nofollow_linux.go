package containerd

import "syscall"

// noFollow makes opening a file fail when its last component is a symlink.
const noFollow = syscall.O_NOFOLLOW

// Package smallfile reads small files — a key, a token, an address file, a
// line of /proc — with the fewest system calls: on Linux os.ReadFile
// first tries to register each regular file with the network poller (two
// fcntl calls to make it non-blocking, an epoll_ctl that fails, two to
// undo it), which is most of the cost of reading a file of a few bytes in
// a process that lives for one hook call.
package smallfile

// Read returns the contents of the file at path, as os.ReadFile does; its
// errors are *fs.PathError, as os.ReadFile's.
func Read(path string) ([]byte, error) { return read(path) }

package wheel

// Link is how package timer reaches the Queue behind a poll.TimerQueue
// without poll exporting a method that only timer would use.
//
// TimerQueue embeds a Link under an unexported name (an alias), so it
// gains no exported field or method, only Link's unexported method link.
// An unexported method can be named only in the package that declares it,
// so *poll.TimerQueue satisfies linked, an interface of this package, and
// only code that may import this package (unipoll's own, it is internal)
// can get the Queue, by QueueOf. The compiler checks the bridge, and
// poll's godoc does not show it.
type Link struct{ q Queue }

func (l *Link) link() *Queue { return &l.q }

type linked interface{ link() *Queue }

// QueueOf returns the Queue of x: a *poll.TimerQueue, or a *Link.
func QueueOf(x linked) *Queue { return x.link() }

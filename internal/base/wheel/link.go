package wheel

// Link is how package timer reaches the Queue behind a poll.TimerQueue
// without poll exporting a method that only timer would use. TimerQueue
// embeds a Link under an unexported name, so that it gains Link's
// unexported method link: a method that only this package can name,
// which makes *poll.TimerQueue satisfy linked and nothing outside the
// module can call. QueueOf, in an internal package, is the one way to use
// it, so the bridge is checked by the compiler and invisible in poll's
// API.
type Link struct{ q Queue }

func (l *Link) link() *Queue { return &l.q }

type linked interface{ link() *Queue }

// QueueOf returns the Queue that x (a *poll.TimerQueue) embeds.
func QueueOf(x linked) *Queue { return x.link() }

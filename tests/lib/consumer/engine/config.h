// A consumer's own engine/config.h, on the consumer's include path: ordo's installed headers
// include each other as <ordo/engine/config.h>, so this file must never be reached.
#error "ordo's installed headers reached the consumer's engine/config.h"

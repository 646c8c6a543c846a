/* cpu: one thread computes for the whole run. Verdict: cpu. */
#include "common.h"
int main(void)
{
	spin(RUN_SECONDS * 1e6);
	return 0;
}

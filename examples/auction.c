/* Sealed-bid second-price (Vickrey) auction between two bidding houses. Party A submits
 * AUCTION_A bids for its bidders, party B AUCTION_B bids for its own (4 each by default).
 * Bidders are numbered A's first (0 .. AUCTION_A-1), then B's. Both learn only
 *   OUTPUT_winner: the number of the highest bidder (ties go to the lowest number), and
 *   OUTPUT_price:  the price the winner pays, the highest bid among all other bidders
 *                  (equal to the winning bid on a tie).
 *
 *   pgc local examples/auction.c --a bids=[100,250,80,40] --b bids=[120,90,300,10]
 *
 * (bidder 6, B's third, wins and pays 250).
 */
#include <stdint.h>

#ifndef AUCTION_A
#define AUCTION_A 4
#endif
#ifndef AUCTION_B
#define AUCTION_B 4
#endif

struct standing {
    uint32_t highest;
    uint32_t second;
    uint32_t winner;
};

static void place_bid(struct standing *s, uint32_t bid, uint32_t bidder)
{
    if (bid > s->highest) {
        s->second = s->highest;
        s->highest = bid;
        s->winner = bidder;
    } else if (bid > s->second) {
        s->second = bid;
    }
}

void mpc_main(uint32_t INPUT_A_bids[AUCTION_A], uint32_t INPUT_B_bids[AUCTION_B],
              uint32_t *OUTPUT_winner, uint32_t *OUTPUT_price)
{
    struct standing s = {0, 0, 0};
    for (int i = 0; i < AUCTION_A; i++)
        place_bid(&s, INPUT_A_bids[i], (uint32_t)i);
    for (int i = 0; i < AUCTION_B; i++)
        place_bid(&s, INPUT_B_bids[i], (uint32_t)(AUCTION_A + i));
    *OUTPUT_winner = s.winner;
    *OUTPUT_price = s.second;
}

"""The agents of notebook 05: a boss has clerks handle invoices; each clerk has a payer pay it."""

import sagents_nb as sn


@sn.tool
def pay(amount: int, to: str) -> str:
    """Pay an invoice.

    Args:
        amount: how much, in euros.
        to: to whom.
    """
    return f"paid {amount} € to {to}"


payer = sn.Agent("payer", does="pays one invoice", tools=[pay])
clerk = sn.Agent("clerk", does="checks one invoice and has it paid", team=[payer])
boss = sn.Agent("boss", does="runs the accounts", team=[clerk])

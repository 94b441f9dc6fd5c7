"""Seed 003: custom Gluon layers (a Block, a HybridBlock with a deferred-shape
weight and a Constant), hybridized and trained one step with L2Loss and
SGD with momentum. The seed's code, unchanged but for the import.

Run: python examples/python/seed_custom_layer.py
"""

# Do some initial imports used throughout this tutorial
from __future__ import print_function
import oxnet as mx
from oxnet import nd, gluon, autograd
from oxnet.gluon.nn import Dense
mx.random.seed(1)                      # Set seed for reproducable results


class NormalizationLayer(gluon.Block):
    def __init__(self):
        super(NormalizationLayer, self).__init__()

    def forward(self, x):
        return (x - nd.min(x)) / (nd.max(x) - nd.min(x))


class NormalizationHybridLayer(gluon.HybridBlock):
    def __init__(self, hidden_units, scales):
        super(NormalizationHybridLayer, self).__init__()

        with self.name_scope():
            self.weights = self.params.get('weights',
                                           shape=(hidden_units, 0),
                                           allow_deferred_init=True)

            self.scales = self.params.get('scales',
                                      shape=scales.shape,
                                      init=mx.init.Constant(scales.asnumpy().tolist()), # Convert to regular list to make this object serializable
                                      differentiable=False)

    def hybrid_forward(self, F, x, weights, scales):
        normalized_data = F.broadcast_div(F.broadcast_sub(x, F.min(x)), (F.broadcast_sub(F.max(x), F.min(x))))
        weighted_data = F.FullyConnected(normalized_data, weights, num_hidden=self.weights.shape[0], no_bias=True)
        scaled_data = F.broadcast_mul(scales, weighted_data)
        return scaled_data


def print_params(title, net):
    """
    Helper function to print out the state of parameters of NormalizationHybridLayer
    """
    print(title)
    hybridlayer_params = {k: v for k, v in net.collect_params().items() if 'normalizationhybridlayer' in k }

    for key, value in hybridlayer_params.items():
        print('{} = {}\n'.format(key, value.data()))


def simple_layers():
    """The seed's first examples: a HybridBlock without parameters, alone and
    in a hybridized network (the seed later redefines the class)."""
    class NormalizationHybridLayer(gluon.HybridBlock):
        def __init__(self):
            super(NormalizationHybridLayer, self).__init__()

        def hybrid_forward(self, F, x):
            return F.broadcast_div(F.broadcast_sub(x, F.min(x)), (F.broadcast_sub(F.max(x), F.min(x))))

    layer = NormalizationHybridLayer()
    out = layer(nd.array([1, 2, 3], ctx=mx.cpu()))

    net = gluon.nn.HybridSequential()                         # Define a Neural Network as a sequence of hybrid blocks
    with net.name_scope():                                    # Used to disambiguate saving and loading net parameters
        net.add(Dense(5))                                     # Add Dense layer with 5 neurons
        net.add(NormalizationHybridLayer())                   # Add our custom layer
        net.add(Dense(1))                                     # Add Dense layer with 1 neurons

    net.initialize(mx.init.Xavier(magnitude=2.24))            # Initialize parameters of all layers
    net.hybridize()                                           # Create, optimize and cache computational graph
    input = nd.random_uniform(low=-10, high=10, shape=(5, 2)) # Create 5 random examples with 2 feature each in range [-10, 10]
    return out, net(input)


def main():
    net = gluon.nn.HybridSequential()                             # Define a Neural Network as a sequence of hybrid blocks
    with net.name_scope():                                        # Used to disambiguate saving and loading net parameters
        net.add(Dense(5))                                         # Add Dense layer with 5 neurons
        net.add(NormalizationHybridLayer(hidden_units=5,
                                         scales = nd.array([2]))) # Add our custom layer
        net.add(Dense(1))                                         # Add Dense layer with 1 neurons


    net.initialize(mx.init.Xavier(magnitude=2.24))                # Initialize parameters of all layers
    net.hybridize()                                               # Create, optimize and cache computational graph

    input = nd.random_uniform(low=-10, high=10, shape=(5, 2))     # Create 5 random examples with 2 feature each in range [-10, 10]
    label = nd.random_uniform(low=-1, high=1, shape=(5, 1))

    mse_loss = gluon.loss.L2Loss()                                # Mean squared error between output and label
    trainer = gluon.Trainer(net.collect_params(),                 # Init trainer with Stochastic Gradient Descent (sgd) optimization method and parameters for it
                            'sgd',
                            {'learning_rate': 0.1, 'momentum': 0.9 })

    with autograd.record():                                       # Autograd records computations done on NDArrays inside "with" block
        output = net(input)                                       # Run forward propogation

        print_params("=========== Parameters after forward pass ===========\n", net)
        loss = mse_loss(output, label)                            # Calculate MSE

    loss.backward()                                               # Backward computes gradients and stores them as a separate array within each NDArray in .grad field
    trainer.step(input.shape[0])                                  # Trainer updates parameters of every block, using .grad field using oprimization method (sgd in this example)
                                                                  # We provide batch size that is used as a divider in cost function formula
    print_params("=========== Parameters after backward pass ===========\n", net)
    return net, input, label


if __name__ == "__main__":
    simple_layers()
    main()
